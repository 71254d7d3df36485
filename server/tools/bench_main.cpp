// sandwich-bench: benchmarks of the engine (engine) and of OpenAI-compatible servers (serve).
#include <cstring>
#include <iostream>

#include "bench_commands.h"
#include "engine/cli_args.h"

namespace {

struct Command {
  const char* name;
  const char* help;
  int (*main)(int, char**, int);
};

const Command kCommands[] = {
    {"engine", "prefill and decode tokens/s of the engine (like llama-bench)",
     sandwich::bench_engine_main},
    {"serve",
     "TTFT/TPOT/SLO attainment/goodput of OpenAI-compatible servers (like vLLM's serving "
     "benchmark)",
     sandwich::bench::bench_serve_main},
};

void usage(std::ostream& os) {
  os << "usage: sandwich-bench <command> [options]\ncommands:\n";
  for (const auto& c : kCommands)
    os << "  " << c.name << std::string(10 - std::strlen(c.name), ' ') << c.help << "\n";
  os << "run 'sandwich-bench <command> --help' for a command's options\n";
}

}  // namespace

int main(int argc, char** argv) {
  return sandwich::run_tool("sandwich-bench", [&]() -> int {
    if (argc < 2) {
      // A usage error: the reason on one line first, then how to call the tool, all on stderr.
      std::cerr << "sandwich-bench: error: no command given (engine, serve)\n";
      usage(std::cerr);
      return 2;
    }
    if (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
      usage(std::cout);
      return 0;
    }
    for (const auto& c : kCommands)
      if (!std::strcmp(argv[1], c.name)) return c.main(argc, argv, 2);
    throw sandwich::CliError(std::string("unknown command '") + argv[1] + "' (see --help)");
  });
}
