// The micro-probes behind calibration.cpp: bandwidth, FMA and BF16 peaks, GEMM, team sync. The
// SIMD loops are the kernels' (peak_probes.h); this file times them.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/peak_probes.h"
#include "kernels/thread_team.h"
#include "tuner/calibration.h"

namespace sandwich::tuner {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
std::unique_ptr<uint8_t, AlignedFree> aligned_bytes(size_t n) {
  n = (n + 63) / 64 * 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, n));
  if (!p)
    throw std::runtime_error("calibration: out of memory for a " + std::to_string(n >> 20) +
                             " MiB buffer");
  return std::unique_ptr<uint8_t, AlignedFree>(p);
}

// Runs the loop until a run takes at least `seconds`; returns GFLOP/s (0 without the loop).
double time_loop(const kernels::PeakLoop& loop, double seconds) {
  if (!loop.run) return 0;
  volatile double sink = 0;
  int64_t iters = 1 << 12;
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + loop.run(iters);
    const double t = since(t0);
    if (t >= seconds) return loop.flops_per_iter * static_cast<double>(iters) / t / 1e9;
    iters *= t > 0 ? std::clamp<int64_t>(static_cast<int64_t>(seconds / t * 1.2), 2, 64) : 64;
  }
}

}  // namespace

double probe_read_bandwidth_gbs(const std::vector<int>& cpus, size_t bytes_per_thread,
                                int repeats) {
  if (cpus.empty()) throw std::invalid_argument("the bandwidth probe needs at least one CPU");
  const int n = static_cast<int>(cpus.size());
  kernels::ThreadTeam team(n, cpus);
  const size_t bytes = std::max<size_t>(bytes_per_thread / 256, 1) * 256;  // stream_read's unit
  std::vector<std::unique_ptr<uint8_t, AlignedFree>> bufs(static_cast<size_t>(n));
  // Each thread allocates and touches its own buffer, so its pages sit on its NUMA node.
  team.run([&](int tid, int) {
    bufs[static_cast<size_t>(tid)] = aligned_bytes(bytes);
    std::memset(bufs[static_cast<size_t>(tid)].get(), 1, bytes);
  });
  std::vector<uint64_t> sink(static_cast<size_t>(n) * 8);
  double best = 0;
  for (int r = 0; r <= repeats; ++r) {  // the first pass warms TLBs and page tables
    const auto t0 = Clock::now();
    team.run([&](int tid, int) {
      sink[static_cast<size_t>(tid) * 8] ^=
          kernels::stream_read(bufs[static_cast<size_t>(tid)].get(), bytes);
    });
    const double t = since(t0);
    if (r > 0) best = std::max(best, static_cast<double>(bytes) * n / t / 1e9);
  }
  team.run([&](int tid, int) { bufs[static_cast<size_t>(tid)].reset(); });
  return best;
}

double probe_fma_f32_gflops(double seconds) {
  return time_loop(kernels::fma_f32_peak_loop(), seconds);
}

double probe_bf16_dot_gflops(double seconds) {
  return time_loop(kernels::bf16_dot_peak_loop(), seconds);
}

double probe_gemm_gflops(int m, int n, int k, int cpu, double seconds) {
  using namespace kernels;
  const DType dt = cpu_has(Isa::Avx512Bf16) ? DType::BF16 : DType::F32;
  PackedWeight w = plan_packed_weight(n, k, dt);
  auto wbuf = aligned_bytes(w.bytes);
  w.data = wbuf.get();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> src(static_cast<size_t>(n) * k), x(static_cast<size_t>(m) * k),
      y(static_cast<size_t>(m) * n);
  for (auto& v : src) v = u(rng);
  for (auto& v : x) v = u(rng);
  pack_weight(w, src.data(), DType::F32, k);
  ThreadTeam team(1, {cpu});
  const GemmArgs a{.x = x.data(), .ldx = k, .m = m, .y = y.data(), .ldy = n};
  gemm(w, a, team);  // warm up
  int64_t runs = 0;
  const auto t0 = Clock::now();
  double t = 0;
  while (t < seconds || runs < 3) {
    gemm(w, a, team);
    ++runs;
    t = since(t0);
  }
  return 2.0 * m * n * k * static_cast<double>(runs) / t / 1e9;
}

double probe_team_region_us(const std::vector<int>& cpus, int regions) {
  kernels::ThreadTeam team(static_cast<int>(cpus.size()), cpus);
  std::vector<int> touched(cpus.size() * 16);
  auto region = [&] { team.run([&](int tid, int) { ++touched[static_cast<size_t>(tid) * 16]; }); };
  for (int i = 0; i < 100; ++i) region();
  // The fastest of 20 batches: a batch during which another process held one of the cores
  // measures the neighbour, not the team.
  const int batch = std::max(1, regions / 20);
  double best = 1e9;
  for (int b = 0; b < 20; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) region();
    best = std::min(best, since(t0) / batch * 1e6);
  }
  return best;
}

}  // namespace sandwich::tuner
