#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "engine/forward.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/microkernel.h"

namespace sandwich {

namespace {

// y = x W[n0:n1]^T for any column range: the GEMM takes ranges that start on its 64-column
// panels, so a head shard that does not (small head sizes) is computed panel-aligned into
// scratch and copied out.
void gemm_columns(const kernels::PackedWeight& w, kernels::GemmArgs a, kernels::ThreadTeam& team,
                  std::vector<float>& scratch) {
  const int64_t n0 = a.n0, n1 = a.n1 < 0 ? w.n : a.n1;
  if (n0 % kernels::kPanel == 0) return kernels::gemm(w, a, team);
  const int64_t b0 = n0 / kernels::kPanel * kernels::kPanel;
  const int64_t b1 = std::min(w.n, (n1 + kernels::kPanel - 1) / kernels::kPanel * kernels::kPanel);
  scratch.resize(static_cast<size_t>(a.m * (b1 - b0)));
  kernels::GemmArgs t = a;
  t.y = scratch.data();
  t.ldy = b1 - b0;
  t.n0 = b0;
  t.n1 = b1;
  t.epilogue = kernels::Epilogue::Store;
  kernels::gemm(w, t, team);
  for (int64_t i = 0; i < a.m; ++i)
    std::copy(scratch.begin() + i * (b1 - b0) + (n0 - b0),
              scratch.begin() + i * (b1 - b0) + (n1 - b0), a.y + i * a.ldy);
}

// Query tokens per attention work item: small enough to balance long prefill chunks over the
// team, large enough that each item amortises its pass over the KV blocks.
constexpr int32_t kAttentionChunk = 32;
}  // namespace

ForwardPass::ForwardPass(const Model& model, KVCache& kv, kernels::ThreadTeam& team, RankView view,
                         Collective* collective)
    : model_(model), kv_(kv), team_(team), view_(view), collective_(collective) {
  const ModelConfig& c = model.config;
  const int R = view.n_ranks;
  if (R < 1 || view.rank < 0 || view.rank >= R) throw std::invalid_argument("invalid rank view");
  if (c.n_kv_heads % R != 0)
    throw std::invalid_argument(std::to_string(R) + " ranks do not divide the model's " +
                                std::to_string(c.n_kv_heads) + " KV heads");
  if (R > 1 && !collective)
    throw std::invalid_argument("a rank view of several ranks needs a collective");
  const int r = view.rank;
  kv_heads_ = {int64_t{c.n_kv_heads} * r / R, int64_t{c.n_kv_heads} * (r + 1) / R};
  // Column shards start on the GEMM's 64-column panels.
  auto panel_split = [&](int64_t n) -> Range {
    const int64_t panels = (n + kernels::kPanel - 1) / kernels::kPanel;
    return {panels * r / R * kernels::kPanel, std::min(n, panels * (r + 1) / R * kernels::kPanel)};
  };
  ffn_cols_ = panel_split(c.ffn_dim);
  vocab_cols_ = panel_split(c.vocab_size);
  if (ffn_cols_.size() == 0 || vocab_cols_.size() == 0)
    throw std::invalid_argument("the model is too small to split over " + std::to_string(R) +
                                " ranks");
}

void ForwardPass::ensure_scratch(int64_t tokens) {
  if (tokens <= capacity_) return;
  const ModelConfig& c = model_.config;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t q_local = kv_heads_.size() * group * c.head_dim;
  const int64_t kv_local = kv_heads_.size() * c.head_dim;
  x_.assign(tokens * c.dim, 0.0f);
  xb_.assign(tokens * c.dim, 0.0f);
  q_.assign(tokens * q_local, 0.0f);
  k_.assign(tokens * kv_local, 0.0f);
  v_.assign(tokens * kv_local, 0.0f);
  att_.assign(tokens * q_local, 0.0f);
  h_.assign(tokens * ffn_cols_.size(), 0.0f);
  capacity_ = tokens;
}

void ForwardPass::run(std::span<const BatchEntry> batch, float* logits) {
  const ModelConfig& c = model_.config;
  const ModelWeights& W = model_.weights;
  const int64_t dim = c.dim, hd = c.head_dim;
  const int64_t group = c.n_heads / c.n_kv_heads;

  // Validate the whole batch before touching the KV cache.
  int64_t T = 0, n_logits = 0;
  for (const BatchEntry& e : batch) {
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    if (n == 0) throw std::invalid_argument("batch entry with no tokens");
    if (e.start_pos < 0 || e.start_pos + n > c.max_seq_len)
      throw std::invalid_argument("positions " + std::to_string(e.start_pos) + ".." +
                                  std::to_string(e.start_pos + n - 1) + " exceed the context of " +
                                  std::to_string(c.max_seq_len));
    if (static_cast<int64_t>(e.block_table.size()) < KVCache::blocks_for(e.start_pos + n))
      throw std::invalid_argument("block table does not cover the chunk");
    for (int32_t t : e.tokens)
      if (t < 0 || t >= c.vocab_size)
        throw std::invalid_argument("token id " + std::to_string(t) +
                                    " outside the vocabulary of " + std::to_string(c.vocab_size));
    T += n;
    n_logits += e.want_logits ? 1 : 0;
  }
  if (T == 0) return;
  ensure_scratch(T);

  // Token index -> (entry, position), in batch order.
  std::vector<int32_t> tok_entry(T), tok_pos(T), tok_id(T);
  {
    int64_t i = 0;
    for (size_t b = 0; b < batch.size(); ++b)
      for (size_t j = 0; j < batch[b].tokens.size(); ++j, ++i) {
        tok_entry[i] = static_cast<int32_t>(b);
        tok_pos[i] = batch[b].start_pos + static_cast<int32_t>(j);
        tok_id[i] = batch[b].tokens[j];
      }
  }

  // With several ranks the residual stream lives in the collective's shared buffer, where it is
  // all-reduced in place.
  float* x = view_.n_ranks > 1 && collective_
                 ? collective_->reduce_buffer(static_cast<size_t>(T * dim))
                 : nullptr;
  if (!x) x = x_.data();
  float* xb = xb_.data();
  team_.parallel_for(T, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) kernels::unpack_row(W.embedding, tok_id[i], x + i * dim);
  });

  const int64_t kvh0 = kv_heads_.begin, kvh1 = kv_heads_.end;
  const int64_t q_local = kv_heads_.size() * group * hd;
  const int64_t kv_local = kv_heads_.size() * hd;
  const int64_t f_local = ffn_cols_.size();
  const bool lead = view_.rank == 0;
  const auto residual = lead ? kernels::Epilogue::Accumulate : kernels::Epilogue::Store;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int half = c.head_dim / 2;

  // Attention work items: (entry, kv head, chunk of query tokens).
  struct Item {
    int32_t entry, head, t0, n;
    int64_t row;  // first token's row in the batch
  };
  std::vector<Item> items;
  {
    int64_t row = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
      const int32_t n = static_cast<int32_t>(batch[b].tokens.size());
      for (int32_t t0 = 0; t0 < n; t0 += kAttentionChunk)
        for (int64_t h = kvh0; h < kvh1; ++h)
          items.push_back({static_cast<int32_t>(b), static_cast<int32_t>(h), t0,
                           std::min(kAttentionChunk, n - t0), row + t0});
      row += n;
    }
    // Longest items first (they see the most context) for a better dynamic balance.
    std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
      return batch[a.entry].start_pos + a.t0 + a.n > batch[b.entry].start_pos + b.t0 + b.n;
    });
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = W.layers[l];
    const kernels::PagedKV kv = kv_.layer(l);

    team_.parallel_for(T, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i)
        kernels::rmsnorm(x + i * dim, L.attn_norm, xb + i * dim, dim, c.norm_eps);
    });
    kernels::GemmArgs a;
    a.x = xb;
    a.ldx = dim;
    a.m = T;
    a.y = q_.data();
    a.ldy = q_local;
    a.n0 = kvh0 * group * hd;
    a.n1 = kvh1 * group * hd;
    gemm_columns(L.wq, a, team_, shard_scratch_);
    a.y = k_.data();
    a.ldy = kv_local;
    a.n0 = kvh0 * hd;
    a.n1 = kvh1 * hd;
    gemm_columns(L.wk, a, team_, shard_scratch_);
    a.y = v_.data();
    gemm_columns(L.wv, a, team_, shard_scratch_);

    team_.parallel_for(T, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) {
        const float* cs = model_.rope_cos.data() + static_cast<size_t>(tok_pos[i]) * half;
        const float* sn = model_.rope_sin.data() + static_cast<size_t>(tok_pos[i]) * half;
        kernels::rope(q_.data() + i * q_local, static_cast<int>(q_local / hd), c.head_dim, cs, sn);
        kernels::rope(k_.data() + i * kv_local, static_cast<int>(kv_local / hd), c.head_dim, cs,
                      sn);
        const BatchEntry& be = batch[tok_entry[i]];
        kernels::kv_store(kv, be.block_table.data(), tok_pos[i], static_cast<int32_t>(kvh0),
                          static_cast<int32_t>(kvh1), k_.data() + i * kv_local,
                          v_.data() + i * kv_local);
      }
    });

    std::atomic<size_t> next{0};
    team_.run([&](int, int) {
      for (size_t it; (it = next.fetch_add(1, std::memory_order_relaxed)) < items.size();) {
        const Item& w = items[it];
        const BatchEntry& be = batch[w.entry];
        const int64_t off = (w.head - kvh0) * group * hd;
        kernels::attention(kv, be.block_table.data(), w.head, q_.data() + w.row * q_local + off,
                           q_local, w.n, static_cast<int32_t>(group), be.start_pos + w.t0, scale,
                           att_.data() + w.row * q_local + off, q_local);
      }
    });

    // Output projection, row-parallel: the lead rank adds into the residual stream, the others
    // contribute their partial sums through the all-reduce.
    a = {};
    a.x = att_.data();
    a.ldx = q_local;
    a.m = T;
    a.y = x;
    a.ldy = dim;
    a.k0 = kvh0 * group * hd;
    a.k1 = kvh1 * group * hd;
    a.epilogue = residual;
    kernels::gemm(L.wo, a, team_);
    if (view_.n_ranks > 1) collective_->all_reduce_sum(x, static_cast<size_t>(T * dim));

    team_.parallel_for(T, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i)
        kernels::rmsnorm(x + i * dim, L.ffn_norm, xb + i * dim, dim, c.norm_eps);
    });
    a = {};
    a.x = xb;
    a.ldx = dim;
    a.m = T;
    a.y = h_.data();
    a.ldy = f_local;
    a.n0 = ffn_cols_.begin;
    a.n1 = ffn_cols_.end;
    kernels::gemm_silu_mul(L.w_gate, L.w_up, a, team_);
    a = {};
    a.x = h_.data();
    a.ldx = f_local;
    a.m = T;
    a.y = x;
    a.ldy = dim;
    a.k0 = ffn_cols_.begin;
    a.k1 = ffn_cols_.end;
    a.epilogue = residual;
    kernels::gemm(L.w_down, a, team_);
    if (view_.n_ranks > 1) collective_->all_reduce_sum(x, static_cast<size_t>(T * dim));
  }

  if (n_logits == 0) return;
  last_.resize(static_cast<size_t>(n_logits * dim));
  {
    int64_t row = 0, k = 0;
    for (const BatchEntry& e : batch) {
      row += static_cast<int64_t>(e.tokens.size());
      if (e.want_logits) {
        kernels::rmsnorm(x + (row - 1) * dim, W.final_norm, last_.data() + k * dim, dim,
                         c.norm_eps);
        ++k;
      }
    }
  }
  kernels::GemmArgs a;
  a.x = last_.data();
  a.ldx = dim;
  a.m = n_logits;
  a.n0 = vocab_cols_.begin;
  a.n1 = vocab_cols_.end;
  if (view_.n_ranks == 1) {
    a.y = logits;
    a.ldy = c.vocab_size;
    kernels::gemm(W.output, a, team_);
    return;
  }
  logits_local_.resize(static_cast<size_t>(n_logits * vocab_cols_.size()));
  a.y = logits_local_.data();
  a.ldy = vocab_cols_.size();
  kernels::gemm(W.output, a, team_);
  collective_->all_gather_columns(logits_local_.data(), n_logits, vocab_cols_.size(),
                                  vocab_cols_.begin, logits, c.vocab_size);
}

}  // namespace sandwich
