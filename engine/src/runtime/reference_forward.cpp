// The reference forward pass: one token at a time, plain loops, double accumulation.
#include <cmath>
#include <stdexcept>

#include "runtime/forward.h"

namespace sandwich::engine {
namespace {

std::vector<float> unpack(const kernels::PackedWeight& w) {
  std::vector<float> out(static_cast<size_t>(w.n * w.k));
  for (int64_t r = 0; r < w.n; ++r) kernels::unpack_row(w, r, out.data() + r * w.k);
  return out;
}

// y[n] = W[n x k] x[k]
void matvec(const std::vector<float>& w, const std::vector<float>& x, std::vector<float>& y,
            int64_t n, int64_t k) {
  y.assign(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < k; ++j) s += static_cast<double>(w[i * k + j]) * x[j];
    y[i] = static_cast<float>(s);
  }
}

std::vector<float> rmsnorm(const std::vector<float>& x, const float* w, float eps) {
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(x[i] * inv * w[i]);
  return y;
}

// Rotate-half RoPE on each head of v, angles pos * inv_freq[i].
void rope(std::vector<float>& v, int head_dim, int pos, const std::vector<double>& inv_freq) {
  const int half = head_dim / 2;
  for (size_t h = 0; h < v.size() / head_dim; ++h) {
    float* p = v.data() + h * head_dim;
    for (int i = 0; i < half; ++i) {
      const double a = pos * inv_freq[i], cs = std::cos(a), sn = std::sin(a);
      const double x0 = p[i], x1 = p[i + half];
      p[i] = static_cast<float>(x0 * cs - x1 * sn);
      p[i + half] = static_cast<float>(x1 * cs + x0 * sn);
    }
  }
}

}  // namespace

ReferenceForward::ReferenceForward(const Model& model) : model_(model) {
  if (!model.whole())
    throw std::invalid_argument(
        "the reference forward pass needs the whole model, and this one holds " +
        model.layers_text() + " (load it without a layer range)");
  const ModelWeights& W = model.weights();
  emb_ = unpack(W.embedding);
  out_ = unpack(W.output);
  for (const LayerWeights& L : W.layers) {
    wq_.push_back(unpack(L.wq));
    wk_.push_back(unpack(L.wk));
    wv_.push_back(unpack(L.wv));
    wo_.push_back(unpack(L.wo));
    wg_.push_back(unpack(L.w_gate));
    wu_.push_back(unpack(L.w_up));
    wd_.push_back(unpack(L.w_down));
  }
  kcache_.resize(model.config.n_layers);
  vcache_.resize(model.config.n_layers);
}

std::vector<float> ReferenceForward::step(int32_t token) {
  const ModelConfig& c = model_.config;
  if (token < 0 || token >= c.vocab_size)
    throw std::invalid_argument("token outside the vocabulary");
  if (pos_ >= c.max_seq_len) throw std::invalid_argument("position past the context");
  const int64_t dim = c.dim, hd = c.head_dim, kvd = c.kv_dim(), qd = c.q_dim();
  const int group = c.n_heads / c.n_kv_heads;
  const auto inv_freq = rope_inv_freq(c);

  std::vector<float> x(emb_.begin() + token * dim, emb_.begin() + (token + 1) * dim);
  std::vector<float> q, k, v, o, g, u, d;
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = model_.weights().layers[l];
    std::vector<float> xb = rmsnorm(x, L.attn_norm, c.norm_eps);
    matvec(wq_[l], xb, q, qd, dim);
    matvec(wk_[l], xb, k, kvd, dim);
    matvec(wv_[l], xb, v, kvd, dim);
    rope(q, c.head_dim, pos_, inv_freq);
    rope(k, c.head_dim, pos_, inv_freq);
    kcache_[l].insert(kcache_[l].end(), k.begin(), k.end());
    vcache_[l].insert(vcache_[l].end(), v.begin(), v.end());

    std::vector<float> att(qd, 0.0f);
    for (int h = 0; h < c.n_heads; ++h) {
      const int kvh = h / group;
      std::vector<double> s(pos_ + 1);
      double mx = -INFINITY;
      for (int p = 0; p <= pos_; ++p) {
        double dot = 0;
        for (int64_t i = 0; i < hd; ++i)
          dot += static_cast<double>(q[h * hd + i]) * kcache_[l][p * kvd + kvh * hd + i];
        s[p] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[p]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int64_t i = 0; i < hd; ++i) {
        double acc = 0;
        for (int p = 0; p <= pos_; ++p) acc += s[p] * vcache_[l][p * kvd + kvh * hd + i];
        att[h * hd + i] = static_cast<float>(acc / sum);
      }
    }
    matvec(wo_[l], att, o, dim, qd);
    for (int64_t i = 0; i < dim; ++i) x[i] += o[i];

    xb = rmsnorm(x, L.ffn_norm, c.norm_eps);
    matvec(wg_[l], xb, g, c.ffn_dim, dim);
    matvec(wu_[l], xb, u, c.ffn_dim, dim);
    for (int64_t i = 0; i < c.ffn_dim; ++i)
      g[i] = static_cast<float>(g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i]);
    matvec(wd_[l], g, d, dim, c.ffn_dim);
    for (int64_t i = 0; i < dim; ++i) x[i] += d[i];
  }
  hidden_ = rmsnorm(x, model_.weights().final_norm, c.norm_eps);
  std::vector<float> logits;
  matvec(out_, hidden_, logits, c.vocab_size, dim);
  ++pos_;
  return logits;
}

}  // namespace sandwich::engine
