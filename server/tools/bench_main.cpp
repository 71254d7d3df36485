// sandwich-bench: benchmarks of the engine (engine) and of OpenAI-compatible servers (serve).
#include "bench_commands.h"
#include "common/tool.h"

int main(int argc, char** argv) {
  const sandwich::Subcommand commands[] = {
      {"engine", "", "prefill and decode tokens/s of the engine (like llama-bench)",
       sandwich::bench_engine_main},
      {"serve", "",
       "TTFT/TPOT/SLO attainment/goodput of OpenAI-compatible servers (like vLLM's serving "
       "benchmark)",
       sandwich::bench::bench_serve_main},
  };
  return sandwich::run_subcommands("sandwich-bench", commands, argc, argv);
}
