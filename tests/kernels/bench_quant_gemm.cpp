// bench_quant_gemm: GEMMs of quantized weights on Llama-3-8B's projection shapes, each timed
// call by call in turn with its references on this shared machine, so that the ratios compare
// like with like:
//   decode (M = 1):  quantized gemm | BF16 gemm of the same shape | a DRAM read stream of the
//                    quantized weight's bytes; ratios: fraction of the stream, speedup over BF16.
//   prefill (M = 512): integer path | BF16-unpacking path (Schedule::unpack_bf16) | BF16 gemm;
//                    ratios against the BF16 gemm, and the BF16 GEMM against the vdpbf16ps peak.
//
//   build/bin/bench_quant_gemm --benchmark_filter=decode --benchmark_repetitions=3
//   build/bin/bench_quant_gemm --benchmark_filter='prefill/.*q4_k'
//
// The manual time of every benchmark is the quantized GEMM's; the counters hold the rest.
// Weights rotate over enough copies to read at least kRotateBytes a round, so none stays in
// the last-level cache.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/huge_page_buffer.h"
#include "common/uniform_fill.h"
#include "kernels/gemm.h"
#include "kernels/peak_probes.h"
#include "kernels/schedule.h"
#include "kernels/thread_team.h"
#include "random_quant_blocks.h"

namespace sk = sandwich::kernels;
using sandwich::HugePageBuffer;

namespace {

constexpr size_t kRotateBytes = size_t{160} << 20;
constexpr int kThreads = 2;

sk::ThreadTeam& team() {
  static sk::ThreadTeam t(kThreads);
  return t;
}

struct Copies {
  std::vector<std::unique_ptr<HugePageBuffer>> bufs;
  std::vector<sk::PackedWeight> w;
  const sk::PackedWeight& next() { return w[i++ % w.size()]; }
  size_t i = 0;
};

int copies_for(size_t bytes) {
  return static_cast<int>(std::max<size_t>(2, (kRotateBytes + bytes - 1) / bytes));
}

Copies quant_copies(sk::QType t, int64_t n, int64_t k) {
  Copies c;
  const auto blocks = sandwich::test::random_quant_blocks(t, n, k, 1);
  const auto& info = sk::qtype_info(t);
  const sk::PackedWeight plan = sk::plan_packed_weight_quant(n, k, t);
  for (int i = 0; i < copies_for(plan.bytes); ++i) {
    c.bufs.push_back(std::make_unique<HugePageBuffer>(plan.bytes));
    c.w.push_back(plan);
    c.w.back().data = c.bufs.back()->get();
    sk::pack_weight_quant(c.w.back(), blocks.data(), k / info.block_elems * info.block_bytes,
                          nullptr, &team());
  }
  return c;
}

Copies& bf16_copies(int64_t n, int64_t k) {
  static std::map<std::pair<int64_t, int64_t>, Copies> cache;
  auto it = cache.find({n, k});
  if (it != cache.end()) return it->second;
  cache.clear();  // one shape at a time: the big ones take a few hundred MB
  Copies& c = cache[{n, k}];
  std::vector<float> src(static_cast<size_t>(n * k));
  sandwich::fill_uniform(src.data(), src.size(), 3);
  const sk::PackedWeight plan = sk::plan_packed_weight(n, k, sk::DType::BF16);
  for (int i = 0; i < copies_for(plan.bytes); ++i) {
    c.bufs.push_back(std::make_unique<HugePageBuffer>(plan.bytes));
    c.w.push_back(plan);
    c.w.back().data = c.bufs.back()->get();
    sk::pack_weight(c.w.back(), src.data(), sk::DType::F32, k, nullptr, &team());
  }
  return c;
}

// Reads `bytes` of a buffer larger than the caches, its threads each a share, rotating.
double stream_seconds(size_t bytes) {
  static HugePageBuffer buf(kRotateBytes * 2);
  static bool filled = [] {
    std::memset(buf.get(), 1, buf.size());
    return true;
  }();
  (void)filled;
  static size_t at = 0;
  bytes = bytes / (256 * kThreads) * (256 * kThreads);
  if (at + bytes > buf.size()) at = 0;
  const char* p = static_cast<const char*>(buf.get()) + at;
  at += bytes;
  const auto t0 = std::chrono::steady_clock::now();
  team().run([&](int tid, int nt) {
    const size_t share = bytes / nt;
    benchmark::DoNotOptimize(sk::stream_read(p + share * tid, share));
  });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void bench_decode(benchmark::State& st, sk::QType t, int64_t n, int64_t k) {
  Copies q = quant_copies(t, n, k);
  Copies& b = bf16_copies(n, k);
  std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
  sandwich::fill_uniform(x.data(), x.size(), 2);
  const sk::GemmArgs a{x.data(), k, 1, y.data(), n};
  const size_t qbytes = q.w[0].bytes;
  double tq = 0, tb = 0, ts = 0;
  for (auto _ : st) {
    const double s = seconds([&] { sk::gemm(q.next(), a, team()); });
    st.SetIterationTime(s);
    tq += s;
    tb += seconds([&] { sk::gemm(b.next(), a, team()); });
    ts += stream_seconds(qbytes);
  }
  const double it = static_cast<double>(st.iterations());
  st.counters["q_GB/s"] = qbytes / (tq / it) / 1e9;
  st.counters["bf16_GB/s"] = 2.0 * n * k / (tb / it) / 1e9;
  st.counters["stream_GB/s"] = qbytes / (ts / it) / 1e9;
  st.counters["q/stream"] = ts / tq;  // fraction of the stream's bandwidth
  st.counters["speedup_vs_bf16"] = tb / tq;
  st.SetLabel(sk::default_quant_schedule({1, n, k, t, kThreads}).to_string());
}

void bench_prefill(benchmark::State& st, sk::QType t, int64_t n, int64_t k) {
  const int64_t m = 512;
  Copies q = quant_copies(t, n, k);
  Copies& b = bf16_copies(n, k);
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  sandwich::fill_uniform(x.data(), x.size(), 2);
  const sk::GemmArgs a{x.data(), k, m, y.data(), n};
  const sk::Schedule integer = sk::default_quant_schedule({m, n, k, t, kThreads});
  sk::Schedule unpack = integer;
  unpack.unpack_bf16 = true;
  double ti = 0, tu = 0, tb = 0;
  for (auto _ : st) {
    const double s = seconds([&] { sk::gemm(q.next(), a, team(), &integer); });
    st.SetIterationTime(s);
    ti += s;
    tu += seconds([&] { sk::gemm(q.next(), a, team(), &unpack); });
    tb += seconds([&] { sk::gemm(b.next(), a, team()); });
  }
  const double it = static_cast<double>(st.iterations()), flops = 2.0 * m * n * k;
  st.counters["int_GFLOP/s"] = flops / (ti / it) / 1e9;
  st.counters["unpack_GFLOP/s"] = flops / (tu / it) / 1e9;
  st.counters["bf16_GFLOP/s"] = flops / (tb / it) / 1e9;
  st.counters["int/bf16"] = tb / ti;
  st.counters["unpack/bf16"] = tb / tu;
  st.counters["int/unpack"] = tu / ti;
  const sk::PeakLoop peak = sk::bf16_dot_peak_loop();
  if (peak.run) {
    constexpr int64_t kIters = 1 << 22;
    double tp = 0;
    team().run([&](int tid, int) {
      const double s = seconds([&] { benchmark::DoNotOptimize(peak.run(kIters)); });
      if (tid == 0) tp = s;
    });
    st.counters["bf16_peak_GFLOP/s"] = peak.flops_per_iter * kIters * kThreads / tp / 1e9;
  }
  st.SetLabel(integer.to_string());
}

// One thread on a weight that stays in L2 (128 x 4096): the kernel's own rate, which decode
// needs well above a core's share of DRAM bandwidth to stay memory-bound.
void bench_l2(benchmark::State& st, sk::QType t, int64_t m) {
  static sk::ThreadTeam one(1);
  const int64_t n = 128, k = 4096;
  Copies q = quant_copies(t, n, k);
  q.w.resize(1);
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  sandwich::fill_uniform(x.data(), x.size(), 2);
  const sk::GemmArgs a{x.data(), k, m, y.data(), n};
  for (auto _ : st) sk::gemm(q.w[0], a, one);
  st.counters["weight_B/s"] = benchmark::Counter(static_cast<double>(q.w[0].bytes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOPS"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

struct Shape {
  const char* name;
  int64_t n, k;
};
constexpr Shape kShapes[] = {{"qkvo_4096x4096", 4096, 4096},
                             {"gate_up_14336x4096", 14336, 4096},
                             {"down_4096x14336", 4096, 14336}};
constexpr sk::QType kTypes[] = {sk::QType::Q4_K, sk::QType::Q6_K, sk::QType::Q8_0, sk::QType::Q4_0};

}  // namespace

int main(int argc, char** argv) {
  for (const Shape& s : kShapes)
    for (sk::QType t : kTypes) {
      const std::string tn(sk::qtype_info(t).name);
      benchmark::RegisterBenchmark(("decode/" + std::string(s.name) + "/" + tn).c_str(),
                                   bench_decode, t, s.n, s.k)
          ->UseManualTime()
          ->MinTime(0.5);
      benchmark::RegisterBenchmark(("prefill/" + std::string(s.name) + "/" + tn).c_str(),
                                   bench_prefill, t, s.n, s.k)
          ->UseManualTime()
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond);
    }
  for (sk::QType t : kTypes)
    for (int64_t m : {1, 4, 8})
      benchmark::RegisterBenchmark(
          ("l2_1thread/" + std::string(sk::qtype_info(t).name) + "/M:" + std::to_string(m)).c_str(),
          bench_l2, t, m);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
