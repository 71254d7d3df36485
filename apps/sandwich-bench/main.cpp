// sandwich-bench: benchmarks of OpenAI-compatible servers (serve, soak) and of the engine
// itself, run in this process (engine).
#include "bench/serve.h"
#include "bench/soak.h"
#include "common/tool.h"
#include "engine_command.h"

int main(int argc, char** argv) {
  const sandwich::Subcommand commands[] = {
      {"engine", "", "prefill and decode tokens/s of the engine (like llama-bench)",
       sandwich::bench_engine_main},
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
