#include "tuner/attention_tuning.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "kernels/attention.h"
#include "kernels/attention_tunables.h"
#include "kernels/thread_team.h"

namespace sandwich::tuner {

namespace {

int64_t get(const KernelParams& p, const char* name, int64_t fallback) {
  const auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

// A paged KV cache of `sequences` x `positions` random keys and values, each sequence on its
// own shuffled blocks, and queries for `tokens` rows.
class AttentionBench : public TunableKernel {
 public:
  AttentionBench(const AttentionShape& s, int32_t sequences, int32_t positions, int64_t tokens)
      : s_(s), team_(s.threads, s.cpus), positions_(positions) {
    if (s.head_dim < 1 || s.group < 1 || s.kv_heads < 1 || s.threads < 1)
      throw std::invalid_argument("attention tuning: an empty shape");
    const int32_t hd = s.head_dim;
    blocks_per_seq_ = (positions + kernels::kKVBlock - 1) / kernels::kKVBlock;
    const int64_t n_blocks = int64_t{sequences} * blocks_per_seq_;
    const int64_t block_elements = kernels::PagedKV::block_elements(s.kv_heads, hd);
    const int64_t elements = n_blocks * block_elements;
    const kernels::DType dtype =
        s.kv_dtype == engine::KVCacheDType::F32 ? kernels::DType::F32 : kernels::DType::BF16;
    storage_.resize(static_cast<size_t>(elements * kernels::dtype_size(dtype) / 4 + 1));
    kv_ = {storage_.data(), block_elements, s.kv_heads, hd, dtype};
    table_.resize(static_cast<size_t>(n_blocks));
    std::iota(table_.begin(), table_.end(), 0);
    std::mt19937 rng(7);
    std::shuffle(table_.begin(), table_.end(), rng);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < elements; ++i)
      kernels::store_from_f32(storage_.data(), i, dtype, u(rng));
    ldq_ = int64_t{s.kv_heads} * s.group * hd;
    q_.resize(static_cast<size_t>(tokens * ldq_));
    for (auto& x : q_) x = u(rng);
    out_.resize(q_.size());
    scale_ = 1.0f / std::sqrt(static_cast<float>(hd));
  }

  KernelParams key() const override {
    return kernels::attention_key(s_.head_dim, s_.group, s_.kv_heads, s_.threads);
  }

 protected:
  struct Item {
    int32_t seq, head, t0, n, start;
    int64_t row;
  };

  void run_items(const std::vector<Item>& items, const kernels::AttentionParams& p) {
    std::atomic<size_t> next{0};
    const int64_t hd = s_.head_dim;
    team_.run([&](int, int) {
      for (size_t it; (it = next.fetch_add(1, std::memory_order_relaxed)) < items.size();) {
        const Item& w = items[it];
        const int64_t off = int64_t{w.head} * s_.group * hd + w.row * ldq_;
        kernels::attention(kv_, table_.data() + int64_t{w.seq} * blocks_per_seq_, w.head,
                           q_.data() + off, ldq_, w.n, s_.group, w.start, scale_, out_.data() + off,
                           ldq_, p);
      }
    });
  }

  AttentionShape s_;
  kernels::ThreadTeam team_;
  int32_t positions_ = 0, blocks_per_seq_ = 0;
  std::vector<float> storage_, q_, out_;
  std::vector<int32_t> table_;
  kernels::PagedKV kv_;
  int64_t ldq_ = 0;
  float scale_ = 1;
};

class AttentionPrefill : public AttentionBench {
 public:
  AttentionPrefill(const AttentionShape& s, int64_t max_m)
      : AttentionBench(s, 1, static_cast<int32_t>(max_m), max_m), max_m_(max_m) {}
  std::string name() const override { return kernels::kAttentionPrefill; }
  int64_t max_m() const override { return max_m_; }
  std::vector<TunableDim> space(int64_t m) const override {
    return {{"q_chunk", 1, std::max<int64_t>(1, m), kernels::kDefaultQueryChunk},
            {"pass_rows", 4,
             std::min<int64_t>(kernels::kMaxPassRows, std::max<int64_t>(4, m * s_.group)), 4},
            {"kv_blocks", 1,
             std::min<int64_t>(kernels::kMaxStepBlocks, std::max<int64_t>(1, (m + 15) / 16)), 1}};
  }
  void run(int64_t m, const KernelParams& p) override {
    const auto chunk = static_cast<int32_t>(get(p, "q_chunk", kernels::kDefaultQueryChunk));
    std::vector<Item> items;
    for (int32_t t0 = 0; t0 < m; t0 += chunk)
      for (int32_t h = 0; h < s_.kv_heads; ++h)
        items.push_back({0, h, t0, std::min<int32_t>(chunk, static_cast<int32_t>(m) - t0), t0, t0});
    // Longest context first, as the forward pass orders them.
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return a.t0 + a.n > b.t0 + b.n; });
    run_items(items, {static_cast<int32_t>(get(p, "pass_rows", 4)),
                      static_cast<int32_t>(get(p, "kv_blocks", 1))});
  }

 private:
  int64_t max_m_;
};

class AttentionDecode : public AttentionBench {
 public:
  AttentionDecode(const AttentionShape& s, int64_t max_batch, int32_t context)
      : AttentionBench(s, static_cast<int32_t>(max_batch), context, max_batch),
        max_batch_(max_batch) {}
  std::string name() const override { return kernels::kAttentionDecode; }
  int64_t max_m() const override { return max_batch_; }
  std::vector<TunableDim> space(int64_t) const override {
    return {{"kv_blocks", 1, std::min<int32_t>(kernels::kMaxStepBlocks, blocks_per_seq_), 1}};
  }
  void run(int64_t m, const KernelParams& p) override {
    std::vector<Item> items;
    for (int32_t seq = 0; seq < m; ++seq)
      for (int32_t h = 0; h < s_.kv_heads; ++h)
        items.push_back({seq, h, 0, 1, positions_ - 1, seq});
    run_items(items, {4, static_cast<int32_t>(get(p, "kv_blocks", 1))});
  }

 private:
  int64_t max_batch_;
};

}  // namespace

AttentionShape attention_shape(const engine::ModelConfig& c, int ranks, int threads) {
  if (ranks < 1 || c.n_kv_heads < 1 || c.n_kv_heads % ranks != 0 || c.n_heads % c.n_kv_heads != 0)
    throw std::invalid_argument(std::to_string(ranks) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  AttentionShape s;
  s.head_dim = c.head_dim;
  s.group = c.n_heads / c.n_kv_heads;
  s.kv_heads = c.n_kv_heads / ranks;
  s.threads = threads;
  return s;
}

std::unique_ptr<TunableKernel> make_attention_prefill(const AttentionShape& s, int64_t max_m) {
  return std::make_unique<AttentionPrefill>(s, max_m);
}

std::unique_ptr<TunableKernel> make_attention_decode(const AttentionShape& s, int64_t max_batch,
                                                     int32_t decode_context) {
  return std::make_unique<AttentionDecode>(s, max_batch, decode_context);
}

std::vector<engine::TunedKernel> tune_attention(
    const engine::ModelConfig& c, int ranks, int threads, int64_t max_m,
    const std::function<bool()>& stop, const std::function<void(const KernelProgress&)>& progress,
    const AttentionTuneOptions& o, KernelSearchStats* stats) {
  const AttentionShape s = attention_shape(c, ranks, threads);
  const KernelClock clock = o.clock ? o.clock : timed_runs(o.measure);
  std::vector<engine::TunedKernel> out;
  {
    auto prefill = make_attention_prefill(s, max_m);
    out.push_back(search_kernel(*prefill, clock, o.search, stop, progress, stats));
  }
  if (stop && stop()) return out;
  auto decode = make_attention_decode(s, o.max_decode_batch, o.decode_context);
  out.push_back(search_kernel(*decode, clock, o.search, stop, progress, stats));
  return out;
}

}  // namespace sandwich::tuner
