#pragma once
// The frame of every command-line tool: errors as one line and an exit code, and tools made of
// subcommands ("sandwich-model make ...") dispatched from one table.
#include <functional>
#include <span>
#include <string>

namespace sandwich {

// Runs a tool's main body: prints "<program>: error: <message>" on one line and returns 1 for
// any exception, so no user input ends in an abort.
int run_tool(const char* program, const std::function<int()>& body);

struct Subcommand {
  std::string name;
  std::string synopsis;  // its arguments in brief, e.g. "FILE" or "--model M [--json]"
  std::string help;      // what it does, one line
  // Parses argv from index first_arg (argv[first_arg - 1] is the command's name).
  std::function<int(int argc, char** argv, int first_arg)> run;
};

// "<program> <command> ...": runs the named command. No command, or an unknown one (with the
// closest name suggested), is a usage error; --help lists the commands and then `epilogue`.
int run_subcommands(const std::string& program, std::span<const Subcommand> commands, int argc,
                    char** argv, const std::string& epilogue = {});

}  // namespace sandwich
