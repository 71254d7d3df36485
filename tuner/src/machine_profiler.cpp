// The GEMM tuner's measurements on this machine: weights packed as the engine packs them (a
// quantized shape's as ggml blocks of its type, repacked as the loader repacks a GGUF's), in
// enough copies that the last-level cache cannot hold them, on a pinned thread team.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "common/huge_page_buffer.h"
#include "common/uniform_fill.h"
#include "kernels/gemm.h"
#include "kernels/quantize.h"
#include "kernels/thread_team.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::tuner {

namespace {

// Weights streamed per round: twice the last-level cache (at least 64 MiB), so that decode
// shapes read DRAM as the engine does, yet small enough to pack in a moment.
size_t rotate_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<size_t>(size_t{64} << 20, l3 > 0 ? 2 * static_cast<size_t>(l3) : 0);
}

class MachineProfiler final : public GemmProfiler {
 public:
  explicit MachineProfiler(const ProfilerOptions& o) : o_(o) {
    if (o_.min_reps < 1 || o_.warmup < 0 || o_.min_seconds < 0)
      throw std::invalid_argument("profiler: min_reps >= 1, warmup >= 0, min_seconds >= 0");
  }

  double seconds(const kernels::GemmShape& s, const kernels::Schedule& c) override {
    prepare(s);
    kernels::ThreadTeam& t = team(s.threads);
    kernels::GemmArgs a;
    a.x = x_.data();
    a.ldx = s.k;
    a.m = s.m;
    a.y = y_.data();
    a.ldy = s.n;
    auto call = [&] {
      const Copy& w = copies_[next_++ % copies_.size()];
      if (s.pair)
        kernels::gemm_silu_mul(w.gate, w.up, a, t, &c);
      else
        kernels::gemm(w.gate, a, t, &c);
    };
    // The previous measurement ran this shape: caches, pages and the team are warm already.
    const auto shape_key = std::make_tuple(s.m, s.n, s.k, type_id(s), s.pair);
    if (shape_key != last_shape_)
      for (int i = 0; i < o_.warmup; ++i) call();
    last_shape_ = shape_key;
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      call();
      const auto t1 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double>(t1 - t0).count());
      if (static_cast<int>(times.size()) >= o_.min_reps &&
          std::chrono::duration<double>(t1 - start).count() >= o_.min_seconds)
        break;
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2];
  }

 private:
  struct Copy {
    kernels::PackedWeight gate, up;
  };

  // The weights' type as one number: a float dtype, or 100 + a quantized type.
  static int type_id(const kernels::GemmShape& s) {
    return s.qtype ? 100 + static_cast<int>(*s.qtype) : static_cast<int>(s.weights);
  }

  // Packs the first copy: float weights from `src`, quantized ones as 16 random rows quantized
  // to the type and repeated (the values do not change the time; quantizing a whole LM head
  // would take longer than measuring it).
  static void pack_first(const kernels::GemmShape& s, const kernels::PackedWeight& w,
                         const std::vector<float>& src, kernels::ThreadTeam& t) {
    if (!s.qtype) {
      kernels::pack_weight(w, src.data(), kernels::DType::F32, s.k, nullptr, &t);
      return;
    }
    const int64_t rows = w.panel;
    const int64_t row_bytes = kernels::quantized_bytes(*s.qtype, s.k);
    std::vector<unsigned char> blocks(static_cast<size_t>(rows * row_bytes));
    kernels::quantize_ref(*s.qtype, src.data(), blocks.data(), rows * s.k);
    for (int64_t r0 = 0; r0 < s.n; r0 += rows)
      kernels::pack_weight_quant_rows(w, blocks.data(), row_bytes, r0, std::min(s.n, r0 + rows),
                                      &t);
  }

  kernels::ThreadTeam& team(int threads) {
    auto& t = teams_[threads];
    if (!t) {
      std::vector<int> cpus = o_.cpus;
      if (!cpus.empty() && static_cast<int>(cpus.size()) != threads)
        throw std::invalid_argument("profiler: " + std::to_string(cpus.size()) +
                                    " CPUs given for a team of " + std::to_string(threads));
      t = std::make_unique<kernels::ThreadTeam>(threads, cpus);
    }
    return *t;
  }

  // Packed copies of this shape's weights, and activations for its M.
  void prepare(const kernels::GemmShape& s) {
    const auto key = std::make_tuple(s.n, s.k, type_id(s), s.pair);
    if (key != weights_key_ || copies_.empty()) {
      copies_.clear();
      weights_key_ = key;
      const kernels::PackedWeight plan = s.qtype
                                             ? kernels::plan_packed_weight_quant(s.n, s.k, *s.qtype)
                                             : kernels::plan_packed_weight(s.n, s.k, s.weights);
      std::vector<float> src(static_cast<size_t>((s.qtype ? plan.panel : s.n) * s.k));
      fill_uniform(src.data(), src.size(), 1);
      const size_t per_copy = plan.bytes * (s.pair ? 2 : 1);
      const size_t n = std::max<size_t>(1, (rotate_bytes() + per_copy - 1) / per_copy);
      kernels::ThreadTeam& t = team(s.threads);
      // One buffer for all copies: tiny weights need thousands of them.
      const size_t stride = (plan.bytes + 4095) / 4096 * 4096;
      const int mats = s.pair ? 2 : 1;
      buffer_.reset();
      buffer_ = std::make_unique<HugePageBuffer>(stride * n * mats);
      auto* base = static_cast<unsigned char*>(buffer_->get());
      // Pack once, then copy: packing is the slow part for large weights.
      for (size_t i = 0; i < n; ++i) {
        Copy c;
        c.gate = plan;
        c.gate.data = base + stride * (i * mats);
        if (s.pair) {
          c.up = plan;
          c.up.data = base + stride * (i * mats + 1);
        }
        if (i == 0) {
          pack_first(s, c.gate, src, t);
          if (s.pair) std::memcpy(c.up.data, c.gate.data, plan.bytes);
        } else {
          std::memcpy(c.gate.data, copies_[0].gate.data, plan.bytes);
          if (s.pair) std::memcpy(c.up.data, copies_[0].gate.data, plan.bytes);
        }
        copies_.push_back(c);
      }
    }
    const size_t xs = static_cast<size_t>(s.m * s.k), ys = static_cast<size_t>(s.m * s.n);
    if (x_.size() < xs) {
      x_.resize(xs);
      fill_uniform(x_.data(), xs, 2);
    }
    if (y_.size() < ys) y_.resize(ys);
  }

  ProfilerOptions o_;
  std::map<int, std::unique_ptr<kernels::ThreadTeam>> teams_;
  std::tuple<int64_t, int64_t, int, bool> weights_key_{-1, -1, -1, false};
  std::unique_ptr<HugePageBuffer> buffer_;
  std::vector<Copy> copies_;
  size_t next_ = 0;
  std::tuple<int64_t, int64_t, int64_t, int, bool> last_shape_{-1, -1, -1, -1, false};
  std::vector<float> x_, y_;
};

}  // namespace

std::unique_ptr<GemmProfiler> make_machine_profiler(const ProfilerOptions& o) {
  return std::make_unique<MachineProfiler>(o);
}

}  // namespace sandwich::tuner
