#pragma once
// Running the project's command-line tools as a user does: exit code, stdout and stderr apart.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "test_data.h"

namespace sandwich::test {

struct CommandResult {
  int code = -1;  // the exit status, or 128 + the signal that ended it
  std::string out, err;
};

// Runs a shell command line (quote its arguments yourself).
inline CommandResult run_command(const std::string& command) {
  TempDir dir;
  const std::string cmd = command + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(dir / "out"),
          slurp(dir / "err")};
}

// The tools' convention for bad input: a non-zero exit (not a crash), one line on stderr that
// says what is wrong, nothing on stdout.
inline void expect_one_line_error(const CommandResult& r, const std::string& fragment) {
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_LT(r.code, 128) << "crashed: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace sandwich::test
