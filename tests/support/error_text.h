#pragma once
// The message a call fails with, for tests of what a user reads.
#include <stdexcept>
#include <string>

namespace sandwich::test {

// What f() throws as an E, or `none` when it throws nothing.
template <class E = std::runtime_error, class F>
std::string error_text(F&& f, const std::string& none = "") {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return none;
}

}  // namespace sandwich::test
