#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/elementwise.h"

namespace sandwich::engine {

void SamplingParams::validate() const {
  auto bad = [](const std::string& msg) { throw std::invalid_argument(msg); };
  if (!(temperature >= 0.0f) || temperature > 100.0f) bad("temperature must be between 0 and 100");
  if (top_k < -1) bad("top_k must be -1 (disabled), 0 (disabled) or a positive count");
  if (!(top_p > 0.0f && top_p <= 1.0f)) bad("top_p must be in (0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) bad("min_p must be in [0, 1]");
  if (!(repetition_penalty > 0.0f) || repetition_penalty > 100.0f)
    bad("repetition_penalty must be in (0, 100]");
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
    bad("presence_penalty must be in [-2, 2]");
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
    bad("frequency_penalty must be in [-2, 2]");
  for (const auto& [token, bias] : logit_bias)
    if (!(bias >= -100.0f && bias <= 100.0f))
      bad("logit_bias of token " + std::to_string(token) + " must be in [-100, 100]");
}

int32_t argmax(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size, uint64_t default_seed)
    : p_(params), vocab_(vocab_size), rng_(params.seed.value_or(default_seed)) {
  p_.validate();
  for (const auto& [token, bias] : p_.logit_bias)
    if (token < 0 || token >= vocab_)
      throw std::invalid_argument("logit_bias names token " + std::to_string(token) +
                                  ", outside the vocabulary of " + std::to_string(vocab_));
}

void Sampler::apply_penalties(float* logits, std::span<const int32_t> prompt,
                              std::span<const int32_t> output) {
  for (const auto& [token, bias] : p_.logit_bias) logits[token] += bias;
  if (p_.repetition_penalty != 1.0f) {
    // Each distinct token seen once: the penalty does not compound with repeats.
    std::vector<uint8_t> seen(vocab_, 0);
    auto mark = [&](int32_t t) {
      if (t < 0 || t >= vocab_ || seen[t]) return;
      seen[t] = 1;
      logits[t] =
          logits[t] > 0 ? logits[t] / p_.repetition_penalty : logits[t] * p_.repetition_penalty;
    };
    for (int32_t t : prompt) mark(t);
    for (int32_t t : output) mark(t);
  }
  if (p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f) {
    counts_.assign(vocab_, 0);
    for (int32_t t : output)
      if (t >= 0 && t < vocab_) ++counts_[t];
    for (int32_t t : output) {
      if (t < 0 || t >= vocab_ || counts_[t] == 0) continue;
      logits[t] -= p_.frequency_penalty * counts_[t] + p_.presence_penalty;
      counts_[t] = 0;  // applied once per distinct token
    }
  }
}

namespace {

// Candidate order of every cut: higher logit first, lower id on ties (so results do not depend
// on how a partition happened to place equal logits).
struct ByLogit {
  const float* l;
  bool operator()(int32_t a, int32_t b) const { return l[a] > l[b] || (l[a] == l[b] && a < b); }
};

double mass_of(const float* w, const int32_t* ids, int64_t n) {
  double z = 0;
  for (int64_t i = 0; i < n; ++i) z += w[ids[i]];
  return z;
}

// The length of the shortest prefix of ids, in ByLogit order, whose weight reaches target.
// A weighted quickselect: halves the range holding the cut each round, so it costs O(n)
// expected, where sorting a flat 128k-token distribution cost tens of milliseconds a token.
// ids is partially reordered; its first `result` entries are the prefix (not sorted).
int64_t nucleus(int32_t* ids, int64_t n, const float* logits, const float* w, double target) {
  const ByLogit order{logits};
  int64_t lo = 0, hi = n;  // the cut's last element lies in [lo, hi)
  double before = 0;       // weight of ids[0, lo), all ahead of ids[lo, hi)
  while (hi - lo > 64) {
    const int64_t mid = lo + (hi - lo) / 2;
    std::nth_element(ids + lo, ids + mid, ids + hi, order);
    const double left = mass_of(w, ids + lo, mid - lo);
    if (before + left >= target) {
      hi = mid;
    } else {
      before += left;
      lo = mid;
    }
  }
  std::sort(ids + lo, ids + hi, order);
  for (int64_t i = lo; i < hi; ++i) {
    before += w[ids[i]];
    if (before >= target) return i + 1;
  }
  return hi;  // rounding left the target just out of reach: keep the whole range
}

}  // namespace

int32_t Sampler::sample(float* logits, std::span<const int32_t> prompt,
                        std::span<const int32_t> output, TokenConstraint* constraint) {
  apply_penalties(logits, prompt, output);
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  if (p_.greedy()) {
    // The model's own choice is usually allowed: one token's check instead of a whole mask.
    int32_t best = argmax(logits, vocab_);
    if (!constraint || constraint->allows(best)) return best;
    constraint->mask(logits, vocab_);
    best = argmax(logits, vocab_);
    return logits[best] == kNone ? -1 : best;
  }
  if (constraint) constraint->mask(logits, vocab_);

  // Weights exp((l - max) / T) for the whole vocabulary in one vectorised pass: the cuts
  // below are all relative to the most likely token, whose weight is 1.
  const int32_t top = argmax(logits, vocab_);
  const float mx = logits[top];
  if (mx == kNone) return -1;  // the constraint allows nothing
  const float inv_t = 1.0f / p_.temperature;
  weights_.resize(vocab_);
  for (int32_t i = 0; i < vocab_; ++i) weights_[i] = (logits[i] - mx) * inv_t;
  kernels::exp_inplace(weights_.data(), vocab_);
  const float* w = weights_.data();

  const bool cut_k = p_.top_k > 0 && p_.top_k < vocab_;
  if (!cut_k && p_.top_p >= 1.0f && p_.min_p <= 0.0f) {
    // No cut: draw straight from the whole vocabulary.
    double z = 0;
    for (int32_t i = 0; i < vocab_; ++i) z += w[i];
    const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * z;
    double cum = 0;
    for (int32_t i = 0; i < vocab_; ++i) {
      cum += w[i];
      if (r < cum) return i;
    }
    return top;
  }

  ids_.resize(vocab_);
  for (int32_t i = 0; i < vocab_; ++i) ids_[i] = i;
  int64_t n = vocab_;
  if (cut_k) {
    std::nth_element(ids_.begin(), ids_.begin() + p_.top_k, ids_.end(), ByLogit{logits});
    n = p_.top_k;
  }
  // top-p and min-p each keep a prefix of the top-k candidates in logit order, so together they
  // keep the shorter one. top-p's mass is relative to the top-k distribution, as in vLLM.
  if (p_.top_p < 1.0f)
    n = nucleus(ids_.data(), n, logits, w, p_.top_p * mass_of(w, ids_.data(), n));
  if (p_.min_p > 0.0f) {
    // p_i / p_max >= min_p; the most likely token always passes (min_p <= 1).
    const float cut = p_.min_p * w[top];
    int64_t keep = 0;
    for (int64_t i = 0; i < n; ++i)
      if (w[ids_[i]] >= cut) ids_[keep++] = ids_[i];
    n = keep;
  }
  const double r =
      std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * mass_of(w, ids_.data(), n);
  double cum = 0;
  for (int64_t i = 0; i < n; ++i) {
    cum += w[ids_[i]];
    if (r < cum) return ids_[i];
  }
  return ids_[n - 1];
}

float Sampler::logprob_of(const float* logits, int32_t vocab_size, int32_t token) {
  const float mx = *std::max_element(logits, logits + vocab_size);
  double z = 0;
  for (int32_t i = 0; i < vocab_size; ++i) z += std::exp(static_cast<double>(logits[i] - mx));
  return static_cast<float>(logits[token] - mx - std::log(z));
}

std::vector<Sampler::TopLogprob> Sampler::top_logprobs(const float* logits, int32_t vocab_size,
                                                       int n) {
  n = std::max(0, std::min(n, vocab_size));
  const float mx = *std::max_element(logits, logits + vocab_size);
  double z = 0;
  for (int32_t i = 0; i < vocab_size; ++i) z += std::exp(static_cast<double>(logits[i] - mx));
  const float lz = static_cast<float>(std::log(z));
  std::vector<int32_t> idx(vocab_size);
  for (int32_t i = 0; i < vocab_size; ++i) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<TopLogprob> out;
  for (int i = 0; i < n; ++i) out.push_back({idx[i], logits[idx[i]] - mx - lz});
  return out;
}

int32_t Sampler::rank_of(const float* logits, int32_t vocab_size, int32_t token) {
  int32_t above = 0;
  for (int32_t i = 0; i < vocab_size; ++i) above += logits[i] > logits[token];
  return above + 1;
}

}  // namespace sandwich::engine
