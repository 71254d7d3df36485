#pragma once
// The server targets' rule: a bad request may end in an ApiError (a 4xx answer), nothing else.
#include "api_error.h"

namespace sandwich::fuzz {

template <class F>
void expect_client_error_at_most(F&& f) {
  try {
    f();
  } catch (const server::ApiError&) {
  }
}

}  // namespace sandwich::fuzz
