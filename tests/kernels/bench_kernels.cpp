// bench_kernels: our GEMM beside oneDNN (BF16 matmul, weights pre-reordered to its blocked
// layout, reorder not timed) and OpenBLAS (SGEMM), on the paper's shapes and Llama-3-8B's
// projections, with a BF16 peak loop and a DRAM read stream in the same run (the kernels' peak
// probes, as the tuner's calibration uses them), so every ratio compares like with like. Ends
// with a summary of the ratios (medians when repeated).
//
//   build/bin/bench_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build/bin/bench_kernels --benchmark_filter='/M:1/|dram|peak'      (a subset)
//   build/bin/bench_kernels --schedules=table.json                     (tuned vs cost model)
//   build/bin/bench_kernels --sweep [M,N,K] [--sweep-out DIR] [--sweep-quick]  (Figure 2)
//
// --sweep (kernel_sweep.h) runs instead of the benchmarks: GFLOPS of every block x thread scheme
// of one shape, the cost model's and the tuner's marked; --sweep-threads N, --sweep-all-tiles.
//
// --schedules=FILE (a `sandwich-tune kernels` table) replaces the shapes by the table's GEMMs at
// M = 1, 2, 4, ..., 128, 512, 2048: each with the cost model's schedule, the table's and oneDNN
// (a gate/up pair as one matmul of twice the columns), and a summary of tuned over cost model.
//
// Weights that fit in the last-level cache would flatter the memory-bound shapes, so every peer
// rotates over enough copies of its weights to read at least kRotateBytes per round.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/huge_page_buffer.h"
#include "common/uniform_fill.h"
#include "engine/plans/checked_schedule_table.h"
#include "kernel_sweep.h"
#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "kernels/peak_probes.h"
#include "kernels/tuned_schedules.h"

#ifdef SANDWICH_BENCH_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif
#ifdef SANDWICH_BENCH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace sk = sandwich::kernels;
using sandwich::HugePageBuffer;

namespace {

constexpr size_t kRotateBytes = size_t{512} << 20;
constexpr size_t kStreamBytes = size_t{1} << 30;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  sandwich::fill_uniform(v.data(), n, seed);
  return v;
}

int copies_for(size_t bytes) {
  return static_cast<int>(std::max<size_t>(1, (kRotateBytes + bytes - 1) / bytes));
}

// Unpinned, like the peers' thread pools.
sk::ThreadTeam& team(int threads) {
  static std::map<int, std::unique_ptr<sk::ThreadTeam>> teams;
  auto& t = teams[threads];
  if (!t) t = std::make_unique<sk::ThreadTeam>(threads);
  return *t;
}

// The source matrix W (n x k, row-major) of the current shape, shared by the peers' packers.
const std::vector<float>& source_weights(int64_t n, int64_t k) {
  static std::pair<int64_t, int64_t> key{0, 0};
  static std::vector<float> w;
  if (key != std::pair{n, k}) {
    w.clear();
    w.shrink_to_fit();
    w = random_floats(static_cast<size_t>(n * k), 1);
    key = {n, k};
  }
  return w;
}

// Per peer, the weights of the current shape only (big shapes take 0.5-1 GB a peer).
template <class T>
T& current_shape(int64_t n, int64_t k, std::function<void(T&)> build) {
  static std::pair<int64_t, int64_t> key{0, 0};
  static std::unique_ptr<T> value;
  if (!value || key != std::pair{n, k}) {
    value.reset();
    value = std::make_unique<T>();
    build(*value);
    key = {n, k};
  }
  return *value;
}

void set_counters(benchmark::State& st, int64_t m, int64_t n, int64_t k, double weight_bytes,
                  int copies) {
  st.counters["FLOPS"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["weight_B/s"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["copies"] = copies;
}

struct OurWeights {
  std::vector<std::unique_ptr<HugePageBuffer>> bufs;
  std::vector<sk::PackedWeight> w;
};

void bench_sandwich(benchmark::State& st, int64_t m, int64_t n, int64_t k, int threads,
                    bool batch_invariant) {
  OurWeights& ow = current_shape<OurWeights>(n, k, [&](OurWeights& o) {
    const sk::PackedWeight plan = sk::plan_packed_weight(n, k, sk::DType::BF16);
    const auto& src = source_weights(n, k);
    for (int c = 0; c < copies_for(plan.bytes); ++c) {
      o.bufs.push_back(std::make_unique<HugePageBuffer>(plan.bytes));
      o.w.push_back(plan);
      o.w.back().data = o.bufs.back()->get();
      sk::pack_weight(o.w.back(), src.data(), sk::DType::F32, k, nullptr, &team(2));
    }
  });
  auto x = random_floats(static_cast<size_t>(m * k), 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  sk::GemmArgs a{x.data(), k, m, y.data(), n};
  a.batch_invariant = batch_invariant;
  sk::ThreadTeam& t = team(threads);
  st.SetLabel(sk::default_schedule({m, n, k, sk::DType::BF16, threads, false, batch_invariant})
                  .to_string());
  size_t i = 0;
  for (auto _ : st) sk::gemm(ow.w[i++ % ow.w.size()], a, t);
  set_counters(st, m, n, k, 2.0 * n * k, static_cast<int>(ow.w.size()));
}
void bench_ours(benchmark::State& st, int64_t m, int64_t n, int64_t k, int threads) {
  bench_sandwich(st, m, n, k, threads, false);
}
// The batch-invariant mode (GemmArgs::batch_invariant), to state what it costs.
void bench_ours_invariant(benchmark::State& st, int64_t m, int64_t n, int64_t k, int threads) {
  bench_sandwich(st, m, n, k, threads, true);
}

// Tuned mode: a gate/up pair's copies are (gate, up) in turn.
struct PairWeights : OurWeights {};

std::map<std::string, std::string>& schedule_labels() {
  static std::map<std::string, std::string> l;
  return l;
}

// The cost model's schedule and the table's, timed call by call in turn (the order swapped every
// round) on the same weights: the memory bus here drifts by 10-30 % between benchmarks, far more
// than two schedules differ, so only paired samples compare them fairly.
struct PairedTimes {
  std::vector<double> cost, tuned;
};
std::map<std::string, PairedTimes>& paired_times() {
  static std::map<std::string, PairedTimes> p;
  return p;
}

void bench_paired(benchmark::State& st, const std::string& shape_name, int64_t m, int64_t n,
                  int64_t k, int threads, bool pair) {
  auto build = [&](OurWeights& o) {
    const sk::PackedWeight plan = sk::plan_packed_weight(n, k, sk::DType::BF16);
    const auto& src = source_weights(n, k);
    const int mats = pair ? 2 : 1;
    for (int c = 0; c < copies_for(plan.bytes * mats) * mats; ++c) {
      o.bufs.push_back(std::make_unique<HugePageBuffer>(plan.bytes));
      o.w.push_back(plan);
      o.w.back().data = o.bufs.back()->get();
      sk::pack_weight(o.w.back(), src.data(), sk::DType::F32, k, nullptr, &team(2));
    }
  };
  OurWeights& ow = pair ? static_cast<OurWeights&>(
                              current_shape<PairWeights>(n, k, [&](PairWeights& p) { build(p); }))
                        : current_shape<OurWeights>(n, k, build);
  const sk::GemmShape shape{m, n, k, sk::DType::BF16, threads, pair};
  const sk::Schedule cost = sk::default_schedule(shape);
  const sk::TunedSchedules* table = sk::installed_tuned_schedules();
  const sk::Schedule* found = table ? table->find(shape) : nullptr;
  if (!found) {
    st.SkipWithError("the table has no schedule for this shape");
    return;
  }
  const sk::Schedule tuned = *found;
  schedule_labels()["cost_model" + shape_name] = cost.to_string();
  schedule_labels()["tuned" + shape_name] = tuned.to_string();
  st.SetLabel(tuned.to_string());
  auto x = random_floats(static_cast<size_t>(m * k), 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  const sk::GemmArgs a{x.data(), k, m, y.data(), n};
  sk::ThreadTeam& t = team(threads);
  size_t i = 0;
  const size_t sets = ow.w.size() / (pair ? 2 : 1);
  auto timed = [&](const sk::Schedule& sched) {
    const size_t c = i++ % sets;
    const auto t0 = std::chrono::steady_clock::now();
    if (pair)
      sk::gemm_silu_mul(ow.w[2 * c], ow.w[2 * c + 1], a, t, &sched);
    else
      sk::gemm(ow.w[c], a, t, &sched);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  PairedTimes& pt = paired_times()[shape_name];
  bool cost_first = true;
  for (auto _ : st) {
    if (cost_first) {
      pt.cost.push_back(timed(cost));
      pt.tuned.push_back(timed(tuned));
    } else {
      pt.tuned.push_back(timed(tuned));
      pt.cost.push_back(timed(cost));
    }
    cost_first = !cost_first;
  }
  set_counters(st, 2 * m, n * (pair ? 2 : 1), k, 4.0 * n * k * (pair ? 2 : 1),
               static_cast<int>(sets));
}

#ifdef SANDWICH_BENCH_ONEDNN
struct DnnlWeights {
  std::unique_ptr<HugePageBuffer> plain;  // k x n BF16 in "ba" order (W row-major), reordered per M
};

void bench_onednn(benchmark::State& st, int64_t m, int64_t n, int64_t k, int threads) {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  omp_set_num_threads(threads);
  static engine eng(engine::kind::cpu, 0);
  stream s(eng);
  DnnlWeights& dw = current_shape<DnnlWeights>(n, k, [&](DnnlWeights& d) {
    const auto& src = source_weights(n, k);
    d.plain = std::make_unique<HugePageBuffer>(static_cast<size_t>(n * k) * 2);
    auto* p = static_cast<uint16_t*>(d.plain->get());
    for (size_t i = 0; i < src.size(); ++i) p[i] = sk::f32_to_bf16(src[i]);
  });
  const memory::desc a_md({m, k}, dt::bf16, tag::ab), b_md({k, n}, dt::bf16, tag::any),
      c_md({m, n}, dt::f32, tag::ab);
  const matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
  // Weights reordered once into the layout oneDNN prefers for this shape (not timed).
  memory b_user({{k, n}, dt::bf16, tag::ba}, eng, dw.plain->get());
  std::vector<std::unique_ptr<HugePageBuffer>> bufs;
  std::vector<memory> bs;
  for (int c = 0; c < copies_for(pd.weights_desc().get_size()); ++c) {
    bufs.push_back(std::make_unique<HugePageBuffer>(pd.weights_desc().get_size()));
    bs.emplace_back(pd.weights_desc(), eng, bufs.back()->get());
    reorder(b_user, bs.back()).execute(s, b_user, bs.back());
  }
  s.wait();
  memory a(pd.src_desc(), eng), c(pd.dst_desc(), eng);
  {
    auto* p = static_cast<uint16_t*>(a.get_data_handle());
    const auto x = random_floats(static_cast<size_t>(m * k), 2);
    for (size_t i = 0; i < x.size(); ++i) p[i] = sk::f32_to_bf16(x[i]);
  }
  const matmul prim(pd);
  st.SetLabel(pd.impl_info_str());
  size_t i = 0;
  for (auto _ : st) {
    prim.execute(s,
                 {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, bs[i++ % bs.size()]}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  set_counters(st, m, n, k, 2.0 * n * k, static_cast<int>(bs.size()));
}
#endif

#ifdef SANDWICH_BENCH_OPENBLAS
struct BlasWeights {
  std::vector<std::unique_ptr<HugePageBuffer>> bufs;  // n x k F32 copies
};

void bench_openblas(benchmark::State& st, int64_t m, int64_t n, int64_t k, int threads) {
  openblas_set_num_threads(threads);
  BlasWeights& bw = current_shape<BlasWeights>(n, k, [&](BlasWeights& b) {
    const auto& src = source_weights(n, k);
    for (int c = 0; c < copies_for(src.size() * 4); ++c) {
      b.bufs.push_back(std::make_unique<HugePageBuffer>(src.size() * 4));
      std::memcpy(b.bufs.back()->get(), src.data(), src.size() * 4);
    }
  });
  auto x = random_floats(static_cast<size_t>(m * k), 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  size_t i = 0;
  for (auto _ : st) {
    const auto* w = static_cast<const float*>(bw.bufs[i++ % bw.bufs.size()]->get());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), w, static_cast<int>(k),
                0.0f, y.data(), static_cast<int>(n));
  }
  set_counters(st, m, n, k, 4.0 * n * k, static_cast<int>(bw.bufs.size()));
}
#endif

// Sequential reads of a buffer far larger than the caches, each thread its share.
void bench_dram_read(benchmark::State& st, int threads) {
  static HugePageBuffer buf(kStreamBytes);
  static bool filled = false;
  if (!filled) {
    std::memset(buf.get(), 1, kStreamBytes);
    filled = true;
  }
  sk::ThreadTeam& t = team(threads);
  const char* p = static_cast<const char*>(buf.get());
  for (auto _ : st) {
    t.run([&](int tid, int nt) {
      const size_t share = kStreamBytes / nt / 256 * 256;
      benchmark::DoNotOptimize(sk::stream_read(p + share * tid, share));
    });
  }
  st.counters["read_B/s"] = benchmark::Counter(static_cast<double>(kStreamBytes),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// vdpbf16ps on registers only, every thread its own chains: the BF16 peak.
constexpr int64_t kPeakIters = 1 << 20;

void bench_bf16_peak(benchmark::State& st, int threads) {
  const sk::PeakLoop loop = sk::bf16_dot_peak_loop();
  if (!loop.run) {
    st.SkipWithError("no AVX512_BF16 on this CPU");
    return;
  }
  sk::ThreadTeam& t = team(threads);
  for (auto _ : st) t.run([&](int, int) { benchmark::DoNotOptimize(loop.run(kPeakIters)); });
  st.counters["FLOPS"] = benchmark::Counter(loop.flops_per_iter * kPeakIters * threads,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

// ---- summary of ratios -------------------------------------------------------------------

struct Key {
  std::string peer;
  int64_t m, n, k;
  int threads;
  bool pair = false;  // tuned mode: a gate/up pair, n columns each
  auto operator<=>(const Key&) const = default;
};

// Collects each benchmark's median (or its only run) and prints the must-show ratios at the end.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (!median && !single) continue;
      const double secs = r.GetAdjustedRealTime() / multiplier(r.time_unit);
      seconds_[r.run_name.function_name] = secs;
    }
  }

  static void add(const std::string& name, Key key) { keys().emplace(name, key); }
  static void add_stream(const std::string& name, const std::string& gemm_name) {
    stream_of()[gemm_name] = name;
  }
  static void add_peak(int threads, const std::string& name) { peaks()[threads] = name; }

  void print_summary() const {
    std::map<Key, double> t;
    for (const auto& [name, key] : keys())
      if (auto it = seconds_.find(name); it != seconds_.end()) t[key] = it->second;
    if (t.empty()) return;
    std::printf("\n== summary (medians of this run) ==\n");
    std::printf("%7s %6s %6s %2s | %9s %9s %9s | %6s %6s\n", "M", "N", "K", "t", "ours", "oneDNN",
                "OpenBLAS", "/dnnl", "/blas");
    std::map<int, std::vector<double>> skinny;  // threads -> ratios to oneDNN for M in 2..64
    for (const auto& [key, secs] : t) {
      if (key.peer != "sandwich") continue;
      const double flops = 2.0 * key.m * key.n * key.k;
      auto peer = [&](const char* p) {
        auto it = t.find(Key{p, key.m, key.n, key.k, key.threads});
        return it == t.end() ? 0.0 : it->second;
      };
      const double d = peer("onednn"), b = peer("openblas");
      std::printf("%7lld %6lld %6lld %2d | %7.1f GF %7.1f GF %7.1f GF | %6.2f %6.2f\n",
                  static_cast<long long>(key.m), static_cast<long long>(key.n),
                  static_cast<long long>(key.k), key.threads, flops / secs / 1e9,
                  d > 0 ? flops / d / 1e9 : 0.0, b > 0 ? flops / b / 1e9 : 0.0,
                  d > 0 ? d / secs : 0.0, b > 0 ? b / secs : 0.0);
      if (key.m >= 2 && key.m <= 64 && d > 0) skinny[key.threads].push_back(d / secs);
    }
    std::printf(
        "\n-- must-show 1: BF16 GEMM with M >= 128, fraction of the measured peak, and vs oneDNN "
        "--\n");
    for (const auto& [key, secs] : t) {
      if (key.peer != "sandwich" || key.m < 128) continue;
      const double gf = 2.0 * key.m * key.n * key.k / secs / 1e9;
      const double peak = peak_gflops(key.threads);
      auto it = t.find(Key{"onednn", key.m, key.n, key.k, key.threads});
      std::printf(
          "M %4lld N %5lld K %5lld t %d: %6.1f GFLOPS = %5.1f%% of peak %6.1f, %5.2fx oneDNN\n",
          static_cast<long long>(key.m), static_cast<long long>(key.n),
          static_cast<long long>(key.k), key.threads, gf, peak > 0 ? 100 * gf / peak : 0.0, peak,
          it != t.end() ? it->second / secs : 0.0);
    }
    std::printf("\n-- must-show 2: skinny M (2..64), mean speedup over oneDNN --\n");
    for (const auto& [threads, r] : skinny) {
      double sum = 0, logsum = 0;
      for (double v : r) sum += v, logsum += std::log(v);
      std::printf("threads %d: arithmetic mean %.2fx, geometric mean %.2fx over %zu shapes\n",
                  threads, sum / r.size(), std::exp(logsum / r.size()), r.size());
    }
    // What any kernel could reach: each shape at its roofline, max(FLOPs at the measured peak,
    // BF16 weight bytes at the stream measured before the shape), against oneDNN's time.
    std::printf("ceiling (every shape at the roofline of this run's peak and stream), by M:\n");
    std::map<int, std::map<int64_t, std::vector<std::pair<double, double>>>>
        ratios;  // t -> M -> (ours, ceiling)
    for (const auto& [key, secs] : t) {
      if (key.peer != "sandwich" || key.m < 2 || key.m > 64) continue;
      auto d = t.find(Key{"onednn", key.m, key.n, key.k, key.threads});
      const double peak = peak_gflops(key.threads), stream = stream_gbs(key.n, key.k, key.threads);
      if (d == t.end() || peak <= 0 || stream <= 0) continue;
      const double bound = std::max(2.0 * key.m * key.n * key.k / (peak * 1e9),
                                    2.0 * key.n * key.k / (stream * 1e9));
      ratios[key.threads][key.m].emplace_back(d->second / secs, d->second / bound);
    }
    for (const auto& [threads, by_m] : ratios) {
      double sum_ours = 0, sum_bound = 0;
      size_t n = 0;
      for (const auto& [m, v] : by_m) {
        double o = 0, b = 0;
        for (auto [ours, bound] : v) o += ours, b += bound;
        std::printf("  t %d M %2lld: ours %.2fx, ceiling %.2fx oneDNN (mean of %zu)\n", threads,
                    static_cast<long long>(m), o / v.size(), b / v.size(), v.size());
        sum_ours += o, sum_bound += b, n += v.size();
      }
      std::printf(
          "threads %d: ours %.2fx, ceiling %.2fx: %.0f%% of the best mean any kernel could reach\n",
          threads, sum_ours / n, sum_bound / n, 100 * sum_ours / sum_bound);
    }
    std::printf(
        "\n-- must-show 3: M = 1, weight bytes read per second vs the DRAM stream measured beside "
        "it --\n");
    for (const auto& [key, secs] : t) {
      if (key.peer != "sandwich" || key.m != 1) continue;
      const double gbs = 2.0 * key.n * key.k / secs / 1e9;
      const double stream = stream_gbs(key.n, key.k, key.threads);
      std::printf("N %5lld K %5lld t %d: %5.1f GB/s = %5.1f%% of the stream's %5.1f GB/s\n",
                  static_cast<long long>(key.n), static_cast<long long>(key.k), key.threads, gbs,
                  stream > 0 ? 100 * gbs / stream : 0.0, stream);
    }
    std::printf("\n-- the batch-invariant mode: its time over the default mode's --\n");
    for (const auto& [key, secs] : t) {
      if (key.peer != "sandwich") continue;
      auto it = t.find(Key{"sandwich_invariant", key.m, key.n, key.k, key.threads});
      if (it == t.end()) continue;
      std::printf("M %4lld N %5lld K %5lld t %d: %.3f ms default, %.3f ms invariant: %.3fx\n",
                  static_cast<long long>(key.m), static_cast<long long>(key.n),
                  static_cast<long long>(key.k), key.threads, secs * 1e3, it->second * 1e3,
                  it->second / secs);
    }
  }

  // Tuned mode: the table's schedules over the cost model's, and both against oneDNN.
  void print_tuned_summary() const {
    std::map<Key, double> t;
    for (const auto& [name, key] : keys())
      if (auto it = seconds_.find(name); it != seconds_.end()) t[key] = it->second;
    auto median = [](std::vector<double> v) {
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    for (const auto& [shape, key] : paired()) {
      auto it = paired_times().find(shape);
      if (it == paired_times().end() || it->second.cost.empty()) continue;
      Key c = key, u = key;
      c.peer = "cost_model";
      u.peer = "tuned";
      t[c] = median(it->second.cost);
      t[u] = median(it->second.tuned);
      labels_by_key()[c] = schedule_labels()["cost_model" + shape];
      labels_by_key()[u] = schedule_labels()["tuned" + shape];
    }
    if (t.empty()) return;
    auto find = [&](const char* peer, const Key& k) {
      auto it = t.find(Key{peer, k.m, k.n, k.k, k.threads, k.pair});
      return it == t.end() ? 0.0 : it->second;
    };
    auto label = [&](const char* peer, const Key& k) {
      auto it = labels_by_key().find(Key{peer, k.m, k.n, k.k, k.threads, k.pair});
      return it == labels_by_key().end() ? std::string() : it->second;
    };
    std::printf("\n== tuned schedules (medians of this run) ==\n");
    std::printf("%5s %6s %6s %4s %2s | %8s %8s %8s | %6s %6s %6s | %s\n", "M", "N", "K", "pair",
                "t", "cost GF", "tuned GF", "dnnl GF", "t/cost", "t/dnnl", "c/dnnl", "tuned");
    double worst = 1e30, log_diff = 0;
    std::string worst_at;
    size_t n_diff = 0;
    std::map<int, std::vector<double>> skinny, big, skinny_cost;
    std::vector<double> same, ceilings;  // ratios where the schedules are one; roofline bounds
    for (const auto& [key, cost] : t) {
      if (key.peer != "cost_model") continue;
      const double tuned = find("tuned", key), dnnl = find("onednn", key);
      if (tuned <= 0) continue;
      const double flops = 2.0 * key.m * key.n * key.k * (key.pair ? 2 : 1);
      const std::string ts = label("tuned", key), cs = label("cost_model", key);
      std::printf("%5lld %6lld %6lld %4s %2d | %8.1f %8.1f %8.1f | %6.3f %6.2f %6.2f | %s%s\n",
                  static_cast<long long>(key.m), static_cast<long long>(key.n),
                  static_cast<long long>(key.k), key.pair ? "yes" : "", key.threads,
                  flops / cost / 1e9, flops / tuned / 1e9, dnnl > 0 ? flops / dnnl / 1e9 : 0.0,
                  cost / tuned, dnnl > 0 ? dnnl / tuned : 0.0, dnnl > 0 ? dnnl / cost : 0.0,
                  ts.c_str(), ts == cs ? " (= cost model)" : "");
      const double r = cost / tuned;
      if (r < worst) {
        worst = r;
        worst_at = "M " + std::to_string(key.m) + " N " + std::to_string(key.n) + " K " +
                   std::to_string(key.k) + (key.pair ? " pair" : "");
      }
      if (ts != cs) {
        log_diff += std::log(r), ++n_diff;
        // What any schedule could reach here: the roofline of this run's peak and stream.
        const double peak = peak_gflops(key.threads), stream = stream_of_key(key);
        if (peak > 0 && stream > 0)
          ceilings.push_back(cost /
                             std::max(flops / (peak * 1e9),
                                      2.0 * key.n * key.k * (key.pair ? 2 : 1) / (stream * 1e9)));
      } else {
        same.push_back(r);
      }
      if (dnnl > 0 && key.m >= 2 && key.m <= 64) {
        skinny[key.threads].push_back(dnnl / tuned);
        skinny_cost[key.threads].push_back(dnnl / cost);
      }
      if (dnnl > 0 && key.m >= 128) big[key.threads].push_back(dnnl / tuned);
    }
    auto geo = [](const std::vector<double>& v) {
      double l = 0;
      for (double x : v) l += std::log(x);
      return v.empty() ? 0.0 : std::exp(l / v.size());
    };
    std::printf("\n-- tuned over the cost model --\n");
    std::printf(
        "worst ratio %.3fx (at %s); geometric mean %.3fx over the %zu points whose "
        "schedules differ\n",
        worst, worst_at.c_str(), n_diff ? std::exp(log_diff / n_diff) : 1.0, n_diff);
    if (!same.empty())
      std::printf(
          "noise: where both are the same schedule the ratio spans %.3f..%.3fx "
          "(geometric mean %.3fx over %zu)\n",
          *std::min_element(same.begin(), same.end()), *std::max_element(same.begin(), same.end()),
          geo(same), same.size());
    if (!ceilings.empty())
      std::printf(
          "ceiling: the roofline (this run's peak and stream) allows at most %.3fx over "
          "the cost model on geometric mean over those %zu points\n",
          geo(ceilings), ceilings.size());
    std::printf("\n-- against oneDNN BF16 matmul --\n");
    for (const auto& [threads, v] : skinny)
      std::printf("threads %d: skinny M 2..64 geometric mean %.2fx (cost model %.2fx) over %zu\n",
                  threads, geo(v), geo(skinny_cost.at(threads)), v.size());
    for (const auto& [threads, v] : big)
      std::printf("threads %d: M >= 128 geometric mean %.2fx, worst %.2fx over %zu\n", threads,
                  geo(v), *std::min_element(v.begin(), v.end()), v.size());
    std::printf("\n-- M = 1: weight bytes per second vs the DRAM stream measured beside it --\n");
    for (const auto& [key, tuned] : t) {
      if (key.peer != "tuned" || key.m != 1) continue;
      const double gbs = 2.0 * key.n * key.k * (key.pair ? 2 : 1) / tuned / 1e9;
      double stream = 0;
      if (auto s = tuned_streams().find(Key{"", 1, key.n, key.k, key.threads, key.pair});
          s != tuned_streams().end())
        if (auto it = seconds_.find(s->second); it != seconds_.end())
          stream = kStreamBytes / it->second / 1e9;
      std::printf("N %5lld K %5lld%s t %d: %5.1f GB/s = %5.1f%% of the stream's %5.1f GB/s\n",
                  static_cast<long long>(key.n), static_cast<long long>(key.k),
                  key.pair ? " pair" : "", key.threads, gbs, stream > 0 ? 100 * gbs / stream : 0.0,
                  stream);
    }
    for (const auto& [threads, name] : peaks())
      std::printf("BF16 peak, %d threads: %.1f GFLOPS\n", threads, peak_gflops(threads));
  }
  // The DRAM stream measured before this key's M = 1 (0 if it did not run).
  double stream_of_key(const Key& key) const {
    if (auto s = tuned_streams().find(Key{"", 1, key.n, key.k, key.threads, key.pair});
        s != tuned_streams().end())
      if (auto it = seconds_.find(s->second); it != seconds_.end())
        return kStreamBytes / it->second / 1e9;
    return 0;
  }
  static void add_paired(const std::string& shape, Key key) { paired().emplace(shape, key); }
  static std::map<std::string, Key>& paired() {
    static std::map<std::string, Key> p;
    return p;
  }
  static std::map<Key, std::string>& labels_by_key() {
    static std::map<Key, std::string> l;
    return l;
  }
  static std::map<Key, std::string>& tuned_streams() {
    static std::map<Key, std::string> s;
    return s;
  }

 private:
  // The BF16 peak measured for this thread count in this run (0 if it did not run).
  double peak_gflops(int threads) const {
    if (auto p = peaks().find(threads); p != peaks().end())
      if (auto it = seconds_.find(p->second); it != seconds_.end())
        return sk::bf16_dot_peak_loop().flops_per_iter * kPeakIters * threads / it->second / 1e9;
    return 0;
  }
  // The DRAM stream measured right before the shape's M = 1 group (0 if it did not run).
  double stream_gbs(int64_t n, int64_t k, int threads) const {
    for (const auto& [name, key] : keys())
      if (key.peer == "sandwich" && key.m == 1 && key.n == n && key.k == k &&
          key.threads == threads)
        if (auto s = stream_of().find(name); s != stream_of().end())
          if (auto it = seconds_.find(s->second); it != seconds_.end())
            return kStreamBytes / it->second / 1e9;
    return 0;
  }
  static double multiplier(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1e9;
      case benchmark::kMicrosecond:
        return 1e6;
      case benchmark::kMillisecond:
        return 1e3;
      case benchmark::kSecond:
        return 1;
    }
    return 1;
  }
  static std::map<std::string, Key>& keys() {
    static std::map<std::string, Key> k;
    return k;
  }
  static std::map<std::string, std::string>& stream_of() {
    static std::map<std::string, std::string> s;
    return s;
  }
  static std::map<int, std::string>& peaks() {
    static std::map<int, std::string> p;
    return p;
  }
  std::map<std::string, double> seconds_;
};

// Shape-major order, peers side by side: each peer keeps one shape's weights at a time, and a
// DRAM stream runs right before each shape's M = 1 group so the decode ratio is taken under
// the same memory conditions.
void register_all() {
  struct Shape {
    int64_t n, k;
    std::vector<int64_t> ms;
  };
  const std::vector<int64_t> ms = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  const std::vector<Shape> shapes = {{1152, 2304, {128}}, {768, 1024, {512}}, {6144, 4096, ms},
                                     {4096, 4096, ms},    {28672, 4096, ms},  {4096, 14336, ms}};
  using Fn = void (*)(benchmark::State&, int64_t, int64_t, int64_t, int);
  std::vector<std::pair<std::string, Fn>> peers = {{"sandwich", bench_ours},
                                                   {"sandwich_invariant", bench_ours_invariant}};
#ifdef SANDWICH_BENCH_ONEDNN
  peers.emplace_back("onednn", bench_onednn);
#endif
#ifdef SANDWICH_BENCH_OPENBLAS
  peers.emplace_back("openblas", bench_openblas);
#endif
  for (int threads : {1, 2}) {
    const std::string ts = "/threads:" + std::to_string(threads);
    const std::string peak = "peak/bf16" + ts;
    benchmark::RegisterBenchmark(peak.c_str(), bench_bf16_peak, threads)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    SummaryReporter::add_peak(threads, peak);
    for (const Shape& s : shapes)
      for (int64_t m : s.ms) {
        const std::string shape = "/M:" + std::to_string(m) + "/N:" + std::to_string(s.n) +
                                  "/K:" + std::to_string(s.k) + ts;
        std::string stream;
        if (m == 1) {
          stream = "dram_read/before_N:" + std::to_string(s.n) + "_K:" + std::to_string(s.k) + ts;
          benchmark::RegisterBenchmark(stream.c_str(), bench_dram_read, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
        for (const auto& [peer, fn] : peers) {
          const std::string name = "gemm/" + peer + shape;
          benchmark::RegisterBenchmark(name.c_str(), fn, m, s.n, s.k, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
          SummaryReporter::add(name, Key{peer, m, s.n, s.k, threads});
          if (m == 1 && peer == "sandwich") SummaryReporter::add_stream(stream, name);
        }
      }
  }
}

// Tuned mode: the installed table's GEMMs, peers cost model / tuned / oneDNN side by side.
void register_tuned() {
  const sk::TunedSchedules* table = sk::installed_tuned_schedules();
  if (!table) return;
  std::vector<sk::GemmKey> gemms = table->all_keys();
  std::sort(gemms.begin(), gemms.end(), [](const sk::GemmKey& a, const sk::GemmKey& b) {
    return std::tie(a.threads, a.n, a.k, a.pair) < std::tie(b.threads, b.n, b.k, b.pair);
  });
  std::map<int, bool> peaks_done;
  for (const sk::GemmKey& g : gemms) {
    if (g.weights != sk::DType::BF16 || g.qtype) continue;  // quantized: bench_quant_gemm
    const std::string ts = "/threads:" + std::to_string(g.threads);
    if (!peaks_done[g.threads]) {
      peaks_done[g.threads] = true;
      const std::string peak = "peak/bf16" + ts;
      benchmark::RegisterBenchmark(peak.c_str(), bench_bf16_peak, g.threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      SummaryReporter::add_peak(g.threads, peak);
    }
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128, 512, 2048}) {
      const std::string shape = "/M:" + std::to_string(m) + "/N:" + std::to_string(g.n) +
                                "/K:" + std::to_string(g.k) + (g.pair ? "/pair" : "") + ts;
      if (m == 1) {
        const std::string stream = "dram_read/before" + shape;
        benchmark::RegisterBenchmark(stream.c_str(), bench_dram_read, g.threads)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
        SummaryReporter::tuned_streams()[Key{"", 1, g.n, g.k, g.threads, g.pair}] = stream;
      }
      auto add = [&](const std::string& peer, auto fn) {
        const std::string name = "gemm/" + peer + shape;
        benchmark::RegisterBenchmark(name.c_str(), fn)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
        SummaryReporter::add(name, Key{peer, m, g.n, g.k, g.threads, g.pair});
      };
      const int64_t n = g.n, k = g.k;
      const int threads = g.threads;
      const bool pair = g.pair;
      {
        const std::string name = "gemm/cost_model_vs_tuned" + shape;
        benchmark::RegisterBenchmark(
            name.c_str(),
            [=](benchmark::State& st) { bench_paired(st, shape, m, n, k, threads, pair); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
        SummaryReporter::add_paired(shape, Key{"", m, g.n, g.k, g.threads, g.pair});
      }
#ifdef SANDWICH_BENCH_ONEDNN
      add("onednn",
          [=](benchmark::State& st) { bench_onednn(st, m, n * (pair ? 2 : 1), k, threads); });
#endif
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Idle peer threads must not keep spinning into the next benchmark longer than ours do
  // (about 0.3 ms): OpenBLAS's default is 2^28 cycles. Its timeout is read when the library
  // loads, so set it and start again.
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "20", 1);
    execv("/proc/self/exe", argv);
  }
  // --schedules=FILE and --sweep* are ours; Google Benchmark sees the rest.
  std::string schedules;
  bool sweep = false;
  sk::SweepOptions so;
  int kept = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      // The value of --NAME=V or --NAME V.
      auto value = [&](const std::string& name) {
        if (a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
        if (i + 1 >= argc) throw std::invalid_argument(name + " needs a value");
        return std::string(argv[++i]);
      };
      auto is = [&](const std::string& name) { return a == name || a.rfind(name + "=", 0) == 0; };
      if (a.rfind("--schedules=", 0) == 0) {
        schedules = a.substr(12);
      } else if (a == "--sweep") {
        sweep = true;
        // An optional M,N,K after it.
        if (i + 1 < argc && std::isdigit(static_cast<unsigned char>(argv[i + 1][0])))
          so.shapes.push_back(sk::parse_sweep_shape(argv[++i]));
      } else if (a.rfind("--sweep=", 0) == 0) {
        sweep = true;
        so.shapes.push_back(sk::parse_sweep_shape(a.substr(8)));
      } else if (is("--sweep-out")) {
        so.out_dir = value("--sweep-out");
      } else if (is("--sweep-threads")) {
        so.threads = std::stoi(value("--sweep-threads"));
        if (so.threads < 1) throw std::invalid_argument("--sweep-threads must be at least 1");
      } else if (a == "--sweep-quick") {
        so.quick = true;
      } else if (a == "--sweep-all-tiles") {
        so.all_tiles = true;
      } else {
        argv[kept++] = argv[i];
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 2;
  }
  argc = kept;
  if (sweep || so.quick || !so.out_dir.empty() || so.all_tiles || so.threads) {
    if (kept > 1) {
      std::fprintf(stderr, "bench_kernels: --sweep runs alone; %s is a Google Benchmark flag\n",
                   argv[1]);
      return 2;
    }
    try {
      return sk::run_sweep(so);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_kernels --sweep: %s\n", e.what());
      return 1;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!schedules.empty()) {
    if (sandwich::engine::install_schedule_table(schedules, std::cerr) == 0) {
      std::fprintf(stderr, "bench_kernels: no tuned schedule could be used from %s\n",
                   schedules.c_str());
      return 1;
    }
    register_tuned();
  } else {
    register_all();
  }
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (schedules.empty())
    reporter.print_summary();
  else
    reporter.print_tuned_summary();
  benchmark::Shutdown();
  return 0;
}
