#pragma once
// A GEMM schedule: which micro-kernel, the computation slice each thread works through, and
// how the threads split the work (polymerization). The cost model proposes one for any shape;
// the tuner may search for better ones and store them in a plan (to_string / parse_schedule).
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

namespace sandwich::kernels {

struct Schedule {
  Isa isa = Isa::Scalar;
  int um = 1, un = 64;  // micro-kernel tile
  // Computation slice of one thread: bm rows (a multiple of um; the A block bm x bk stays in
  // L2), bn columns (a multiple of the 64-column panel; the C slice bm x bn stays in L2) and
  // bk K elements per block (a multiple of the kernel's K step, 2 for BF16; the B chunk
  // bk x un stays in L1 while the tiles sweep down the bm rows).
  int64_t bm = 1, bn = 64, bk = 256;
  // Threads along M, N and K: tm * tn * tk = threads. tk > 1 is split-k: each K share sums into
  // its own partial C, reduced at the end.
  int tm = 1, tn = 1, tk = 1;
  // The tiles of each B chunk prefetch the thread's next chunk into L2 (see gemm_driver.cpp);
  // off only to measure what it is worth.
  bool prefetch = true;
  // Quantized weights only: widen the weight blocks to BF16, a chunk of bn rows at a time, and
  // run the BF16 kernels on them, instead of the integer kernels (int8 activations, vpdpbusd).
  // The integer path has um activation rows per tile and 16-row panels (un = 16); the tuner
  // measures which path is faster for a shape (default_quant_schedule picks by rule).
  bool unpack_bf16 = false;

  // "avx512bf16 6x64 slice 96x256x256 threads 1x2x1" (+ " noprefetch", " unpackbf16").
  std::string to_string() const;
  bool operator==(const Schedule&) const = default;
};

// Parses Schedule::to_string()'s format; throws std::invalid_argument naming the bad part.
Schedule parse_schedule(const std::string& text);

// `s` with its split-k threads (tk) given to N instead, or to M where N has too few panels for
// them and an M of m rows has the tiles: each output element then sums all of its K on one
// thread. Micro-kernel and slice stay as chosen. What a GEMM runs when it must not split K
// (GemmArgs::batch_invariant, GemmArgs::no_split_k, the fused SiLU*mul epilogue); n: columns.
Schedule without_split_k(Schedule s, int64_t m, int64_t n);

struct GemmShape {
  int64_t m, n, k;
  DType weights;
  int threads;
  bool pair = false;  // the gate/up pair of gemm_silu_mul: two weights per output column
  // A batch-invariant GEMM (GemmArgs::batch_invariant): no split-k, one-set micro-kernels.
  bool batch_invariant = false;
  // Set for quantized weights (PackedWeight::qtype): the GEMM is the quantized one, so
  // default_schedule and validate_schedule answer as default_quant_schedule and
  // validate_quant_schedule do, and `weights` is BF16 (what the unpack_bf16 path widens to).
  std::optional<QType> qtype;
};

// Predicted seconds of a schedule on this machine's roofline: compute at the micro-kernel's
// step cost, weight and activation traffic at DRAM bandwidth, thread imbalance, overheads.
// Float weights only (a quantized shape has no roofline here).
double predict_seconds(const GemmShape& s, const Schedule& sched);
// The cost model's choice for a shape (cached per shape: cheap after the first call); for a
// quantized shape, default_quant_schedule's.
Schedule default_schedule(const GemmShape& s);
// Throws std::invalid_argument naming what is wrong (unknown kernel, bad split, ...); a
// quantized shape is checked by validate_quant_schedule.
void validate_schedule(const GemmShape& s, const Schedule& sched);

// A GEMM of quantized weights (PackedWeight::qtype).
struct QuantShape {
  int64_t m, n, k;
  QType type;
  int threads;
  bool pair = false;
};
// The same GEMM as a GemmShape (qtype set, weights BF16), and back (s.qtype must be set).
GemmShape gemm_shape_of(const QuantShape& s);
QuantShape quant_shape_of(const GemmShape& s);
// The ISA of the integer kernels for quantized weights on this CPU: AVX-512 needs VNNI
// (vpdpbusd), else AVX2, else scalar; SANDWICH_ISA caps it like every kernel.
Isa quant_gemm_isa();
// The rule's schedule for a quantized GEMM: the integer path (Schedule::unpack_bf16 off: the
// BF16 path can at best match the BF16 GEMM, which the integer path beat at M = 512, see
// bench_quant_gemm), the ISA's tallest tile up to M, slices sized to L2, panels over threads.
// On the BF16 path bn is the rows widened at a time (whole 64-row panels).
Schedule default_quant_schedule(const QuantShape& s);
void validate_quant_schedule(const QuantShape& s, const Schedule& sched);

// Roofline parameters of this machine; measured values can be set by a tuner before the first
// default_schedule() call (the cache is not invalidated).
struct MachineModel {
  double clock_hz = 3.5e9;
  double dram_bytes_per_s_per_core = 38e9;
  double dram_bytes_per_s_total = 78e9;
  double l1_bytes = 48 * 1024;
  double l2_bytes = 1024 * 1024;
  double region_overhead_s = 2e-6;  // starting a parallel region and its barriers
  // One- and two-row GEMMs (decode) stream their weights fastest with software prefetch and
  // short K blocks on Intel Xeon (Sapphire/Emerald Rapids, 2 threads: 30.4 against 25.7 GB/s
  // at M = 1, 57 against 42 GFLOPS at M = 2), but with long unprefetched K blocks left to the
  // hardware prefetcher on AMD Zen 5 (75-87 against 57-77 GB/s). Defaults by vendor
  // (SANDWICH_SKINNY_HW_PREFETCH=0/1 overrides it; the GEMM tuner measures instead).
  bool skinny_hw_prefetch = cpu_is_amd();
};
MachineModel& machine_model();

}  // namespace sandwich::kernels
