// The fast forward pass: the batch's tokens go through the embedding, then each layer's attention
// block and FFN block, then the final norm and the logits, as one row per token in every GEMM.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "formats/model_source.h"
#include "kernels/attention.h"
#include "kernels/attention_tunables.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/microkernel.h"
#include "runtime/forward.h"
#include "runtime/paged_kv.h"
#include "runtime/rank_shards.h"

namespace sandwich::engine {

namespace {

// The GEMM of a column-parallel projection: y = x W[cols]^T, the output columns `cols` of W (a
// rank's heads, FFN or vocabulary columns) for the m rows of x.
kernels::GemmArgs column_parallel(const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                                  IndexRange cols, GemmModes modes) {
  return {.x = x,
          .ldx = ldx,
          .m = m,
          .y = y,
          .ldy = ldy,
          .n0 = cols.begin,
          .n1 = cols.end,
          .batch_invariant = modes.batch_invariant,
          .no_split_k = modes.no_split_k};
}

// The GEMM of a row-parallel projection: y (+)= x W[:, k]^T, where x holds only the input columns
// `k` of W (the rank's share of the previous column-parallel output); the ranks' partial sums
// meet in the all-reduce.
kernels::GemmArgs row_parallel(const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                               IndexRange k, kernels::Epilogue epilogue, GemmModes modes) {
  return {.x = x,
          .ldx = ldx,
          .m = m,
          .y = y,
          .ldy = ldy,
          .k0 = k.begin,
          .k1 = k.end,
          .epilogue = epilogue,
          .batch_invariant = modes.batch_invariant,
          .no_split_k = modes.no_split_k};
}

// Row-parallel projections add into the residual stream on the lead rank only; the others' partial
// sums reach it through the all-reduce.
kernels::Epilogue residual_epilogue(const RankView& view) {
  return view.rank == 0 ? kernels::Epilogue::Accumulate : kernels::Epilogue::Store;
}

// Runs a column-parallel GEMM for any column range: the GEMM takes ranges that start on its
// 64-column panels, so a head shard that does not (small head sizes) is computed panel-aligned
// into scratch and copied out.
void gemm_columns(const kernels::PackedWeight& w, kernels::GemmArgs a, kernels::ThreadTeam& team,
                  std::vector<float>& scratch) {
  const int64_t n0 = a.n0, n1 = a.n1 < 0 ? w.n : a.n1;
  const int64_t g = kernels::shard_granularity_n(w);
  if (n0 % g == 0) return kernels::gemm(w, a, team);
  const int64_t b0 = n0 / g * g;
  const int64_t b1 = std::min(w.n, (n1 + g - 1) / g * g);
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

// A rank's weights may hold only part of a split matrix (placed_weights.h): the columns from its
// range's first panel on (64 columns; 16 rows of a quantized matrix), or panels that start at its
// first K column. Such a part is told from the whole by its size, and the rank's ranges are moved
// to its origin.
IndexRange local_cols(const kernels::PackedWeight& w, int64_t full_n, IndexRange cols) {
  if (w.n == full_n) return cols;
  const int64_t panel = kernels::shard_granularity_n(w);
  const int64_t origin = cols.begin / panel * panel;
  return {cols.begin - origin, cols.end - origin};
}

IndexRange local_k(const kernels::PackedWeight& w, int64_t full_k, IndexRange k) {
  return w.k == full_k ? k : IndexRange{0, k.size()};
}

// The input columns a row-parallel shard of w may start and end on.
int64_t k_granularity(const kernels::PackedWeight& w) {
  return w.qtype ? kernels::shard_granularity_k(w) : 1;
}

std::string type_name(const kernels::PackedWeight& w) {
  return std::string(w.qtype ? kernels::qtype_info(*w.qtype).name : kernels::dtype_name(w.dtype));
}

// The first weight whose shards under `n_ranks` would cut one of its blocks, as the refusal's
// words ("" if none).
std::string cut_block(const Model& model, int n_ranks) {
  const ModelWeights& W = model.weights();
  for (int r = 0; r < n_ranks; ++r) {
    const RankShards s = rank_shards(model, r, n_ranks);
    const LayerRange held = model.layers();  // a pipeline stage's
    for (int l = held.begin; l < held.end; ++l) {
      const LayerWeights& L = W.layers[l];
      const std::pair<const kernels::PackedWeight*, IndexRange> row_parallel[] = {
          {&L.wo, s.q_cols}, {&L.w_down, s.ffn_cols}};
      const char* names[] = {"attn_output", "ffn_down"};
      for (int i = 0; i < 2; ++i) {
        const auto& [w, k] = row_parallel[i];
        const int64_t g = k_granularity(*w);
        if (k.size() > 0 && k.begin % g == 0 && (k.end % g == 0 || k.end == w->k)) continue;
        return tensor_name(l, names[i]) + " (" + type_name(*w) + ", " + std::to_string(g) +
               "-value blocks, " + std::to_string(w->k) +
               " input columns) would be cut at column " +
               std::to_string(k.begin % g != 0 || k.size() == 0 ? k.begin : k.end);
      }
    }
  }
  return "";
}

}  // namespace

RankShards rank_shards(const Model& model, int r, int R) {
  int64_t ffn_g = kernels::kPanel;
  const LayerRange held = model.layers();  // the others are absent in a pipeline stage
  for (int l = held.begin; l < held.end; ++l) {
    const LayerWeights& L = model.weights().layers[l];
    ffn_g = std::max(ffn_g, ffn_granularity(L.w_gate, L.w_up, L.w_down));
  }
  return rank_shards(model.config, r, R, ffn_g);
}

void check_tensor_parallel(const Model& model, int R) {
  if (R < 1) throw std::invalid_argument("invalid rank count " + std::to_string(R));
  // Throws where the ranks do not divide the KV heads or the model is too small for them.
  for (int r = 0; r < R; ++r) rank_shards(model, r, R);
  const std::string cut = cut_block(model, R);
  if (cut.empty()) return;
  auto fits = [&](int n) {
    try {
      for (int r = 0; r < n; ++r) rank_shards(model, r, n);
    } catch (const std::invalid_argument&) {
      return false;
    }
    return cut_block(model, n).empty();
  };
  const ModelConfig& c = model.config;
  std::vector<int> ok;
  for (int r = 1; r <= c.n_kv_heads && r <= 64; ++r)
    if (c.n_kv_heads % r == 0 && fits(r)) ok.push_back(r);
  std::string use;
  for (size_t i = 0; i < ok.size(); ++i)
    use += (i == 0 ? "" : i + 1 == ok.size() ? " or " : ", ") + std::to_string(ok[i]);
  throw std::invalid_argument(std::to_string(R) +
                              " tensor-parallel ranks would cut quantized blocks: " + cut +
                              " (a shard must hold whole blocks); use " + use +
                              (ok.size() == 1 && ok[0] == 1 ? " rank" : " ranks"));
}

// The batch flattened to tokens (in batch order): token i is batch[entry[i]].tokens[...], id[i] at
// position pos[i]; and the attention work of its sequences.
struct ForwardPass::Step {
  // One attention work item: a chunk of one sequence's query tokens against one KV head.
  struct Item {
    int32_t entry, head, t0, n;
    int64_t row;  // first token's row in the batch
    bool decode;  // its sequence decodes one token (attention_decode's block sizes)
  };

  std::span<const BatchEntry> batch;
  int64_t tokens = 0;
  int64_t n_logits = 0;
  std::vector<int32_t> entry, pos, id;
  std::vector<Item> items;  // longest context first
  // The installed attention block sizes for this step's prompt tokens and decoding sequences.
  kernels::AttentionPlan prefill, decode;
  float* x = nullptr;  // the residual stream, tokens x dim
};

ForwardPass::ForwardPass(const Model& model, KVCache& kv, kernels::ThreadTeam& team, RankView view,
                         Collective* collective, GemmModes gemm, const ModelWeights* weights)
    : model_(model),
      w_(weights ? *weights : model.weights()),
      kv_(kv),
      team_(team),
      view_(view),
      collective_(collective),
      gemm_(gemm) {
  const ModelConfig& c = model.config;
  const int R = view.n_ranks;
  if (R > 1 && !collective)
    throw std::invalid_argument("a rank view of several ranks needs a collective");
  if (R > 1) check_tensor_parallel(model, R);
  const RankShards s = rank_shards(model, view.rank, R);
  kv_heads_ = s.kv_heads;
  q_cols_ = s.q_cols;
  kv_cols_ = s.kv_cols;
  ffn_cols_ = s.ffn_cols;
  vocab_cols_ = s.vocab_cols;
  const int64_t group = c.n_heads / c.n_kv_heads;
  attention_key_ = kernels::attention_key(c.head_dim, static_cast<int32_t>(group),
                                          static_cast<int32_t>(kv_heads_.size()), team.size());
}

void ForwardPass::run(std::span<const BatchEntry> batch, float* logits, float* hidden) {
  run(batch, StageIO{}, logits, hidden);
}

void ForwardPass::run(std::span<const BatchEntry> batch, const StageIO& io, float* logits,
                      float* hidden) {
  if (!model_.has_embedding() && !io.in)
    throw std::invalid_argument(
        "a pipeline stage without the embedding needs the hidden states "
        "of the stage before it");
  check_batch(batch);
  Step s = plan_step(batch);
  if (s.tokens == 0) return;
  ensure_scratch(s.tokens);
  s.x = residual_stream(s.tokens);
  const int64_t dim = model_.config.dim;
  if (model_.has_embedding())
    embed(s);
  else
    std::copy(io.in, io.in + s.tokens * dim, s.x);
  const ModelWeights& W = w_;
  const LayerRange layers = model_.layers();
  for (int l = layers.begin; l < layers.end; ++l) {
    const kernels::PagedKV kv = paged_kv(kv_, l);
    attention_block(W.layers[l], kv, s);
    ffn_block(W.layers[l], s);
  }
  if (!model_.has_head()) {
    if (io.out) std::copy(s.x, s.x + s.tokens * dim, io.out);
    return;
  }
  if (s.n_logits > 0) final_logits(s, logits);
  if (hidden) final_hidden(s, hidden);
}

// The whole batch is checked before the KV cache is touched.
void ForwardPass::check_batch(std::span<const BatchEntry> batch) const {
  const ModelConfig& c = model_.config;
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
  }
}

ForwardPass::Step ForwardPass::plan_step(std::span<const BatchEntry> batch) const {
  Step s;
  s.batch = batch;
  for (const BatchEntry& e : batch) {
    s.tokens += static_cast<int64_t>(e.tokens.size());
    s.n_logits += e.logit_rows();
  }
  if (s.tokens == 0) return s;
  s.entry.resize(s.tokens);
  s.pos.resize(s.tokens);
  s.id.resize(s.tokens);
  int64_t i = 0;
  for (size_t b = 0; b < batch.size(); ++b)
    for (size_t j = 0; j < batch[b].tokens.size(); ++j, ++i) {
      s.entry[i] = static_cast<int32_t>(b);
      s.pos[i] = batch[b].start_pos + static_cast<int32_t>(j);
      s.id[i] = batch[b].tokens[j];
    }

  // Attention block sizes, looked up once per step: M is the prompt tokens for prefill, the
  // sequences for decode.
  int64_t prompt_tokens = 0, decoding = 0;
  for (const BatchEntry& e : batch)
    (e.tokens.size() == 1 ? decoding : prompt_tokens) += static_cast<int64_t>(e.tokens.size());
  if (prompt_tokens > 0) s.prefill = kernels::attention_prefill_plan(attention_key_, prompt_tokens);
  if (decoding > 0) s.decode = kernels::attention_decode_plan(attention_key_, decoding);

  // Attention work items: (entry, KV head, chunk of query tokens).
  int64_t row = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    const int32_t n = static_cast<int32_t>(batch[b].tokens.size());
    const bool decode = n == 1;
    const int32_t chunk = decode ? 1 : s.prefill.q_chunk;
    for (int32_t t0 = 0; t0 < n; t0 += chunk)
      for (int64_t h = kv_heads_.begin; h < kv_heads_.end; ++h)
        s.items.push_back({static_cast<int32_t>(b), static_cast<int32_t>(h), t0,
                           std::min(chunk, n - t0), row + t0, decode});
    row += n;
  }
  // Longest items first (they see the most context) for a better dynamic balance.
  std::stable_sort(s.items.begin(), s.items.end(), [&](const Step::Item& a, const Step::Item& b) {
    return batch[a.entry].start_pos + a.t0 + a.n > batch[b.entry].start_pos + b.t0 + b.n;
  });
  return s;
}

void ForwardPass::ensure_scratch(int64_t tokens) {
  if (tokens <= capacity_) return;
  const int64_t dim = model_.config.dim;
  x_.assign(tokens * dim, 0.0f);
  xb_.assign(tokens * dim, 0.0f);
  q_.assign(tokens * q_cols_.size(), 0.0f);
  k_.assign(tokens * kv_cols_.size(), 0.0f);
  v_.assign(tokens * kv_cols_.size(), 0.0f);
  att_.assign(tokens * q_cols_.size(), 0.0f);
  h_.assign(tokens * ffn_cols_.size(), 0.0f);
  capacity_ = tokens;
}

// With several ranks the residual stream lives in the collective's shared buffer, where it is
// all-reduced in place.
float* ForwardPass::residual_stream(int64_t tokens) {
  float* x = view_.n_ranks > 1 && collective_
                 ? collective_->reduce_buffer(static_cast<size_t>(tokens * model_.config.dim))
                 : nullptr;
  return x ? x : x_.data();
}

void ForwardPass::embed(const Step& s) {
  const int64_t dim = model_.config.dim;
  const kernels::PackedWeight& embedding = w_.embedding;
  team_.parallel_for(s.tokens, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) kernels::unpack_row(embedding, s.id[i], s.x + i * dim);
  });
}

void ForwardPass::attention_block(const LayerWeights& L, const kernels::PagedKV& kv,
                                  const Step& s) {
  const ModelConfig& c = model_.config;
  const int64_t dim = c.dim, T = s.tokens;
  norm(s, L.attn_norm);
  const float* xb = xb_.data();
  gemm_columns(L.wq,
               column_parallel(xb, dim, T, q_.data(), q_cols_.size(),
                               local_cols(L.wq, c.q_dim(), q_cols_), gemm_),
               team_, shard_scratch_);
  gemm_columns(L.wk,
               column_parallel(xb, dim, T, k_.data(), kv_cols_.size(),
                               local_cols(L.wk, c.kv_dim(), kv_cols_), gemm_),
               team_, shard_scratch_);
  gemm_columns(L.wv,
               column_parallel(xb, dim, T, v_.data(), kv_cols_.size(),
                               local_cols(L.wv, c.kv_dim(), kv_cols_), gemm_),
               team_, shard_scratch_);
  rope_and_store_kv(kv, s);
  attend(kv, s);
  kernels::gemm(L.wo,
                row_parallel(att_.data(), q_cols_.size(), T, s.x, dim,
                             local_k(L.wo, c.q_dim(), q_cols_), residual_epilogue(view_), gemm_),
                team_);
  all_reduce(s);
}

void ForwardPass::ffn_block(const LayerWeights& L, const Step& s) {
  const ModelConfig& c = model_.config;
  const int64_t dim = c.dim, T = s.tokens;
  norm(s, L.ffn_norm);
  const kernels::GemmArgs a = column_parallel(xb_.data(), dim, T, h_.data(), ffn_cols_.size(),
                                              local_cols(L.w_gate, c.ffn_dim, ffn_cols_), gemm_);
  if (L.w_gate.qtype == L.w_up.qtype && L.w_gate.dtype == L.w_up.dtype) {
    kernels::gemm_silu_mul(L.w_gate, L.w_up, a, team_);
  } else {
    // Gate and up of different types (a mixed quantization preset): two GEMMs, then SwiGLU.
    const int64_t n = ffn_cols_.size();
    up_.resize(static_cast<size_t>(T * n));
    kernels::gemm(L.w_gate, a, team_);
    kernels::GemmArgs u = a;
    u.y = up_.data();
    kernels::gemm(L.w_up, u, team_);
    float* h = h_.data();
    const float* up = up_.data();
    team_.parallel_for(
        T * n, [&](int64_t b, int64_t e, int) { kernels::silu_mul(h + b, up + b, h + b, e - b); });
  }
  kernels::gemm(
      L.w_down,
      row_parallel(h_.data(), ffn_cols_.size(), T, s.x, dim,
                   local_k(L.w_down, c.ffn_dim, ffn_cols_), residual_epilogue(view_), gemm_),
      team_);
  all_reduce(s);
}

// The final norm of each entry's last token (every token's, for all_logits), then its logits:
// this rank's vocabulary columns, gathered from all ranks when there are several.
void ForwardPass::final_logits(const Step& s, float* logits) {
  const ModelConfig& c = model_.config;
  const ModelWeights& W = w_;
  const int64_t dim = c.dim;
  last_.resize(static_cast<size_t>(s.n_logits * dim));
  int64_t row = 0, k = 0;
  for (const BatchEntry& e : s.batch) {
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    row += n;
    for (int64_t r = row - e.logit_rows(); r < row; ++r, ++k)
      kernels::rmsnorm(s.x + r * dim, W.final_norm, last_.data() + k * dim, dim, c.norm_eps);
  }
  if (view_.n_ranks == 1) {
    kernels::gemm(
        W.output,
        column_parallel(last_.data(), dim, s.n_logits, logits, c.vocab_size, vocab_cols_, gemm_),
        team_);
    return;
  }
  logits_local_.resize(static_cast<size_t>(s.n_logits * vocab_cols_.size()));
  kernels::gemm(
      W.output,
      column_parallel(last_.data(), dim, s.n_logits, logits_local_.data(), vocab_cols_.size(),
                      local_cols(W.output, c.vocab_size, vocab_cols_), gemm_),
      team_);
  collective_->all_gather_columns(logits_local_.data(), s.n_logits, vocab_cols_.size(),
                                  vocab_cols_.begin, logits, c.vocab_size);
}

// The final norm of the tokens of each entry that asks for hidden states, as embeddings pool them:
// the last token's, or the sum over the chunk (in double: a mean over thousands of tokens).
// Every rank holds the whole residual stream after the last all-reduce; one of them writes.
void ForwardPass::final_hidden(const Step& s, float* hidden) {
  const ModelConfig& c = model_.config;
  const int64_t dim = c.dim;
  struct Job {
    int64_t first_row, rows, out_row;
  };
  std::vector<Job> jobs;
  int64_t row = 0, out = 0;
  for (const BatchEntry& e : s.batch) {
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    if (e.hidden == HiddenOutput::Last) jobs.push_back({row + n - 1, 1, out++});
    if (e.hidden == HiddenOutput::Sum) jobs.push_back({row, n, out++});
    row += n;
  }
  if (jobs.empty()) return;
  team_.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t b, int64_t e, int) {
    std::vector<float> normed(static_cast<size_t>(dim));
    std::vector<double> sum(static_cast<size_t>(dim));
    for (int64_t j = b; j < e; ++j) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t r = jobs[j].first_row; r < jobs[j].first_row + jobs[j].rows; ++r) {
        kernels::rmsnorm(s.x + r * dim, w_.final_norm, normed.data(), dim, c.norm_eps);
        for (int64_t i = 0; i < dim; ++i) sum[i] += normed[i];
      }
      float* dst = hidden + jobs[j].out_row * dim;
      for (int64_t i = 0; i < dim; ++i) dst[i] = static_cast<float>(sum[i]);
    }
  });
}

// xb = rmsnorm(x) * weight, token by token.
void ForwardPass::norm(const Step& s, const float* weight) {
  const ModelConfig& c = model_.config;
  const int64_t dim = c.dim;
  float* xb = xb_.data();
  team_.parallel_for(s.tokens, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      kernels::rmsnorm(s.x + i * dim, weight, xb + i * dim, dim, c.norm_eps);
  });
}

// RoPE on q and k at each token's position, then k and v into the sequence's KV pages.
void ForwardPass::rope_and_store_kv(const kernels::PagedKV& kv, const Step& s) {
  const ModelConfig& c = model_.config;
  const int64_t hd = c.head_dim, q_local = q_cols_.size(), kv_local = kv_cols_.size();
  const int half = c.head_dim / 2;
  team_.parallel_for(s.tokens, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const float* cs = model_.rope_cos.data() + static_cast<size_t>(s.pos[i]) * half;
      const float* sn = model_.rope_sin.data() + static_cast<size_t>(s.pos[i]) * half;
      kernels::rope(q_.data() + i * q_local, static_cast<int>(q_local / hd), c.head_dim, cs, sn);
      kernels::rope(k_.data() + i * kv_local, static_cast<int>(kv_local / hd), c.head_dim, cs, sn);
      const BatchEntry& be = s.batch[s.entry[i]];
      kernels::kv_store(kv, be.block_table.data(), s.pos[i], static_cast<int32_t>(kv_heads_.begin),
                        static_cast<int32_t>(kv_heads_.end), k_.data() + i * kv_local,
                        v_.data() + i * kv_local);
    }
  });
}

// Each query head against its sequence's cached keys and values, work items taken dynamically.
void ForwardPass::attend(const kernels::PagedKV& kv, const Step& s) {
  const ModelConfig& c = model_.config;
  const int64_t hd = c.head_dim, group = c.n_heads / c.n_kv_heads, q_local = q_cols_.size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::atomic<size_t> next{0};
  team_.run([&](int, int) {
    for (size_t it; (it = next.fetch_add(1, std::memory_order_relaxed)) < s.items.size();) {
      const Step::Item& w = s.items[it];
      const BatchEntry& be = s.batch[w.entry];
      const int64_t off = (w.head - kv_heads_.begin) * group * hd;
      kernels::attention(kv, be.block_table.data(), w.head, q_.data() + w.row * q_local + off,
                         q_local, w.n, static_cast<int32_t>(group), be.start_pos + w.t0, scale,
                         att_.data() + w.row * q_local + off, q_local,
                         w.decode ? s.decode.kernel : s.prefill.kernel);
    }
  });
}

void ForwardPass::all_reduce(const Step& s) {
  if (view_.n_ranks > 1)
    collective_->all_reduce_sum(s.x, static_cast<size_t>(s.tokens * model_.config.dim));
}

}  // namespace sandwich::engine
