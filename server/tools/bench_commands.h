#pragma once
// Subcommands of sandwich-bench; each parses argv from index first_arg and returns the exit code.
namespace sandwich {
int bench_engine_main(int argc, char** argv, int first_arg);
}  // namespace sandwich
