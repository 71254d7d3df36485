#pragma once
// Running sandwich-tune in tests, and its one-line errors.
#include <string>

#include <gtest/gtest.h>

#include "command.h"
#include "test_data.h"

namespace sandwich::test {

inline CommandResult tune(const std::string& args) {
  return run_command((bin_dir() / "sandwich-tune").string() + " " + args);
}

inline void expect_tune_error(const CommandResult& r, const std::string& what) {
  expect_one_line_error(r, what);
  EXPECT_EQ(r.err.rfind("sandwich-tune: error: ", 0), 0u) << r.err;
}

}  // namespace sandwich::test
