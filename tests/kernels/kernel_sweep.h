#pragma once
// bench_kernels --sweep: the paper's Figure 2. Times the block x thread schemes of one GEMM shape
// (the tuner's search space: slices bm x bn x bk under every polymerization tm x tn x tk) and
// reports GFLOPS per scheme, as a fraction of the BF16 peak measured in the same run, with the
// cost model's and the tuner's choices marked; writes CSV and a gnuplot picture per shape.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sandwich::kernels {

struct SweepOptions {
  // (M, N, K) of BF16 GEMMs; empty: the paper's (128, 1152, 2304) and (512, 768, 1024).
  std::vector<std::array<int64_t, 3>> shapes;
  int threads = 0;  // 0: every CPU this process may run on
  // Only the micro-kernels of the cost model's and the tuner's schedules (the block x thread
  // schemes of the figure); all_tiles: every micro-kernel too (tens of thousands of schemes).
  bool all_tiles = false;
  // At most ~60 schemes a shape (an even sample of the space, the two choices always kept) and
  // the tuner's search finetuning one micro-kernel: about a minute for both shapes on 2 cores.
  // Each scheme's time is its best of 3 rounds here (2 in the full sweep).
  bool quick = false;
  std::string out_dir;  // CSV and pictures; "" writes none
};

// "M,N,K" -> {M, N, K}; throws std::invalid_argument naming the text.
std::array<int64_t, 3> parse_sweep_shape(const std::string& text);

// Runs the sweep, printing to stdout; returns the exit status.
int run_sweep(const SweepOptions& o);

}  // namespace sandwich::kernels
