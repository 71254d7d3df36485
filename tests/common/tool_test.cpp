// run_tool and run_subcommands: errors as one line and an exit code, one dispatch table.
#include "common/tool.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/version.h"

namespace sandwich {
namespace {

struct ToolRun {
  int rc;
  std::string out, err;
};

ToolRun run(std::vector<std::string> words, std::vector<std::string>* seen = nullptr) {
  std::vector<char*> argv;
  words.insert(words.begin(), "tool");
  for (auto& w : words) argv.push_back(w.data());
  const Subcommand commands[] = {
      {"make", "--preset P [--seed N]", "write a file",
       [seen](int argc, char** argv, int first) {
         if (seen)
           for (int i = first; i < argc; ++i) seen->push_back(argv[i]);
         return 0;
       }},
      {"info", "FILE", "describe a file",
       [](int, char**, int) -> int { throw std::runtime_error("no such\nfile"); }},
  };
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int rc = run_subcommands("tool", commands, static_cast<int>(argv.size()), argv.data(),
                                 "T: a topology\n");
  ToolRun r{rc, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

TEST(Tool, DispatchesToTheNamedCommandWithItsArguments) {
  std::vector<std::string> seen;
  EXPECT_EQ(run({"make", "--preset", "x"}, &seen).rc, 0);
  EXPECT_EQ(seen, (std::vector<std::string>{"--preset", "x"}));
}

TEST(Tool, ErrorsAreOneLine) {
  const ToolRun r = run({"info", "f"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "tool: error: no such file\n");
}

TEST(Tool, NoOrUnknownCommandIsAUsageError) {
  const ToolRun none = run({});
  EXPECT_EQ(none.rc, 2);
  EXPECT_EQ(none.err.rfind("tool: error: no command given (make, info)\nusage: tool <command>", 0),
            0u)
      << none.err;
  const ToolRun typo = run({"mkae"});
  EXPECT_EQ(typo.rc, 1);
  EXPECT_EQ(typo.err, "tool: error: unknown command 'mkae' (did you mean make?)\n");
  EXPECT_EQ(run({"frobnicate"}).err,
            "tool: error: unknown command 'frobnicate' (make, info; see --help)\n");
}

TEST(Tool, HelpListsTheCommands) {
  const ToolRun r = run({"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "usage: tool <command> [options]\n"
            "commands:\n"
            "  make --preset P [--seed N]\n"
            "      write a file\n"
            "  info FILE          describe a file\n"
            "T: a topology\n"
            "run 'tool <command> --help' for a command's options, 'tool --version' for the "
            "version\n");
}

TEST(Tool, VersionNamesTheToolTheCommitAndTheBuild) {
  const ToolRun r = run({"--version"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, version_line("tool") + "\n");
  EXPECT_EQ(r.out.rfind(std::string("tool ") + project_version() + " (git ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" build)\n"), std::string::npos) << r.out;
}

TEST(Tool, RunToolTurnsExceptionsIntoExitCodeOne) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_tool("x", []() -> int { throw CliError("bad"); }), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "x: error: bad\n");
  EXPECT_EQ(run_tool("x", [] { return 3; }), 3);
}

}  // namespace
}  // namespace sandwich
