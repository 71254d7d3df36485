// The micro-probes behind calibration.cpp: bandwidth, FMA and BF16 peaks, GEMM, team sync.
#include <immintrin.h>

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

// Sums 64-bit words with 8 independent accumulators: the adds hide behind the loads, so the
// loop runs at the core's read bandwidth (the compiler vectorizes it at any ISA level).
__attribute__((noinline)) uint64_t stream_sum(const uint64_t* p, size_t n) {
  uint64_t a[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += p[i + j];
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

// 16 chains of 16-lane FMAs: enough in flight for 2 FMA pipes of latency 4.
__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t iters) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  // Stored, not _mm512_reduce_add_ps: GCC 12 warns about that intrinsic (PR105593).
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f,avx512bf16"))) double bf16_loop(int64_t iters) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  // Stored, not _mm512_reduce_add_ps: GCC 12 warns about that intrinsic (PR105593).
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

// Runs loop(iters) until it takes at least `seconds`; returns FLOP/s.
template <class Loop>
double time_loop(Loop loop, double flops_per_iter, double seconds) {
  volatile double sink = 0;
  int64_t iters = 1 << 12;
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + loop(iters);
    const double t = since(t0);
    if (t >= seconds) return flops_per_iter * static_cast<double>(iters) / t;
    iters *= t > 0 ? std::clamp<int64_t>(static_cast<int64_t>(seconds / t * 1.2), 2, 64) : 64;
  }
}

}  // namespace

double probe_read_bandwidth_gbs(const std::vector<int>& cpus, size_t bytes_per_thread,
                                int repeats) {
  if (cpus.empty()) throw std::invalid_argument("the bandwidth probe needs at least one CPU");
  const int n = static_cast<int>(cpus.size());
  kernels::ThreadTeam team(n, cpus);
  const size_t words = bytes_per_thread / 8;
  std::vector<std::unique_ptr<uint8_t, AlignedFree>> bufs(static_cast<size_t>(n));
  // Each thread allocates and touches its own buffer, so its pages sit on its NUMA node.
  team.run([&](int tid, int) {
    bufs[static_cast<size_t>(tid)] = aligned_bytes(words * 8);
    std::memset(bufs[static_cast<size_t>(tid)].get(), 1, words * 8);
  });
  std::vector<uint64_t> sink(static_cast<size_t>(n) * 8);
  double best = 0;
  for (int r = 0; r <= repeats; ++r) {  // the first pass warms TLBs and page tables
    const auto t0 = Clock::now();
    team.run([&](int tid, int) {
      sink[static_cast<size_t>(tid) * 8] += stream_sum(
          reinterpret_cast<const uint64_t*>(bufs[static_cast<size_t>(tid)].get()), words);
    });
    const double t = since(t0);
    if (r > 0) best = std::max(best, static_cast<double>(words * 8) * n / t / 1e9);
  }
  team.run([&](int tid, int) { bufs[static_cast<size_t>(tid)].reset(); });
  return best;
}

double probe_fma_f32_gflops(double seconds) {
  if (__builtin_cpu_supports("avx512f"))
    return time_loop(fma_loop_avx512, 16.0 * 16 * 2, seconds) / 1e9;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return time_loop(fma_loop_avx2, 12.0 * 8 * 2, seconds) / 1e9;
  return 0;
}

double probe_bf16_dot_gflops(double seconds) {
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  return time_loop(bf16_loop, 16.0 * 16 * 2 * 2, seconds) / 1e9;
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
  GemmArgs a;
  a.x = x.data();
  a.ldx = k;
  a.m = m;
  a.y = y.data();
  a.ldy = n;
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
