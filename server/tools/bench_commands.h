#pragma once
// Subcommands of sandwich-bench; each parses argv from index first_arg and returns the exit code.
namespace sandwich {
int bench_engine_main(int argc, char** argv, int first_arg);
namespace bench {
int bench_serve_main(int argc, char** argv, int first_arg);  // server/src/bench_serve_cli.cpp
}
}  // namespace sandwich
