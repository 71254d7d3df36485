#include "common/tool.h"

#include <cstring>
#include <iostream>

#include "closest_name.h"
#include "common/cli.h"
#include "common/version.h"

namespace sandwich {

int run_tool(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (auto& ch : msg)
      if (ch == '\n') ch = ' ';
    // One write: processes mpirun started share its stderr, and pieces of their lines would mix.
    std::cerr << std::string(program) + ": error: " + msg + "\n";
    return 1;
  } catch (...) {
    std::cerr << std::string(program) + ": error: unknown failure\n";
    return 1;
  }
}

namespace {

std::string usage(const std::string& program, std::span<const Subcommand> commands,
                  const std::string& epilogue) {
  std::string s = "usage: " + program + " <command> [options]\ncommands:\n";
  for (const auto& c : commands) {
    std::string line = "  " + c.name + (c.synopsis.empty() ? "" : " " + c.synopsis);
    // Short synopses share the line with the help; long ones put it on the next.
    if (line.size() < 21)
      s += line + std::string(21 - line.size(), ' ') + c.help + "\n";
    else
      s += line + "\n      " + c.help + "\n";
  }
  s += epilogue;
  s += "run '" + program + " <command> --help' for a command's options, '" + program +
       " --version' for the version\n";
  return s;
}

std::string names(std::span<const Subcommand> commands) {
  std::string s;
  for (const auto& c : commands) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

}  // namespace

int run_subcommands(const std::string& program, std::span<const Subcommand> commands, int argc,
                    char** argv, const std::string& epilogue) {
  return run_tool(program.c_str(), [&]() -> int {
    if (argc < 2) {
      // A usage error: the reason on one line first, then how to call the tool, all on stderr.
      std::cerr << program << ": error: no command given (" << names(commands) << ")\n"
                << usage(program, commands, epilogue);
      return 2;
    }
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h") {
      std::cout << usage(program, commands, epilogue);
      return 0;
    }
    if (cmd == "--version") {
      std::cout << version_line(program) << "\n";
      return 0;
    }
    std::vector<std::string> known;
    for (const auto& c : commands) {
      if (c.name == cmd) return c.run(argc, argv, 2);
      known.push_back(c.name);
    }
    std::string msg = "unknown command '" + cmd + "' (" + names(commands) + "; see --help)";
    if (auto near = closest_name(cmd, known))
      msg = "unknown command '" + cmd + "' (did you mean " + *near + "?)";
    throw CliError(msg);
  });
}

}  // namespace sandwich
