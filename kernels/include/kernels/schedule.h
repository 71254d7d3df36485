#pragma once
// A GEMM schedule: which micro-kernel, the computation slice each thread works through, and
// how the threads split the work (polymerization). The cost model proposes one for any shape;
// the tuner may search for better ones and store them in a plan.
#include <cstdint>
#include <string>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

struct Schedule {
  Isa isa = Isa::Scalar;
  int um = 1, un = 64;  // micro-kernel tile
  // Computation slice: rows of A kept in L2 (bm), columns of B per slice (bn, a multiple of the
  // 64-column panel) and the K block whose B panel chunk stays in L1 (bk, even).
  int64_t bm = 1, bn = 64, bk = 256;
  // Threads along M, N and K (tk > 1 is split-k, with a reduction); tm * tn * tk = threads.
  int tm = 1, tn = 1, tk = 1;

  std::string to_string() const;  // "avx512bf16 6x64 slice 96x256x256 threads 1x2x1"
  bool operator==(const Schedule&) const = default;
};

struct GemmShape {
  int64_t m, n, k;
  DType weights;
  int threads;
};

// Predicted seconds of a schedule on this machine's roofline: compute at the micro-kernel's
// efficiency, weight and activation traffic at DRAM / cache bandwidth, thread imbalance.
double predict_seconds(const GemmShape& s, const Schedule& sched);
// The cost model's choice for a shape (cached per shape).
Schedule default_schedule(const GemmShape& s);
// Throws std::invalid_argument naming what is wrong (unknown kernel, bad split, ...).
void validate_schedule(const GemmShape& s, const Schedule& sched);

// Roofline parameters of one core of this machine; measured values can be set by a tuner.
struct MachineModel {
  double dram_bytes_per_s_per_core = 38e9;
  double dram_bytes_per_s_total = 78e9;
  double l2_bytes_per_s = 200e9;
  double peak_bf16_flops_per_core = 448e9;
  double peak_f32_flops_per_core = 224e9;
  double region_overhead_s = 2e-6;  // starting a parallel region and its barriers
};
MachineModel& machine_model();

}  // namespace sandwich::kernels
