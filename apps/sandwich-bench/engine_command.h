#pragma once
// `sandwich-bench engine` (engine_command.cpp).

namespace sandwich {

// Parses argv[first_arg..] and runs the engine's benchmark in this process; errors are printed
// as "sandwich-bench engine: error: ..." and return 1.
int bench_engine_main(int argc, char** argv, int first_arg);

}  // namespace sandwich
