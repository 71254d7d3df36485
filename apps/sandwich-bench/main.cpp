// sandwich-bench: benchmarks of OpenAI-compatible servers (serve) and of the engine (engine).
// bench/ knows nothing of the engine, so `engine` runs its own program, sandwich-bench-engine,
// from this program's folder (as git runs git-<command>).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/serve.h"
#include "bench/soak.h"
#include "common/cli.h"
#include "common/tool.h"

namespace {

int run_engine_bench(int argc, char** argv, int first_arg) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path peer = self.parent_path() / "sandwich-bench-engine";
  if (ec || !std::filesystem::exists(peer, ec))
    throw sandwich::CliError("'engine' runs " + peer.string() +
                             ", which is not there (build the engine's tools)");
  std::vector<char*> args{const_cast<char*>(peer.c_str())};
  for (int i = first_arg; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(peer.c_str(), args.data());
  throw std::runtime_error("cannot run " + peer.string() + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  const sandwich::Subcommand commands[] = {
      {"engine", "", "prefill and decode tokens/s of the engine (like llama-bench)",
       run_engine_bench},
      {"serve", "",
       "TTFT/TPOT/SLO attainment/goodput of OpenAI-compatible servers (like vLLM's serving "
       "benchmark)",
       sandwich::bench::bench_serve_main},
      {"soak", "",
       "minutes of mixed hostile load against a local server, then checks that it came through "
       "whole",
       sandwich::bench::bench_soak_main},
  };
  return sandwich::run_subcommands("sandwich-bench", commands, argc, argv);
}
