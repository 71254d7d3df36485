#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sandwich {

void SamplingParams::validate() const {
  auto bad = [](const std::string& msg) { throw std::invalid_argument(msg); };
  if (!(temperature >= 0.0f) || temperature > 100.0f) bad("temperature must be between 0 and 100");
  if (top_k < -1) bad("top_k must be -1 (disabled), 0 (disabled) or a positive count");
  if (!(top_p > 0.0f && top_p <= 1.0f)) bad("top_p must be in (0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) bad("min_p must be in [0, 1]");
  if (!(repetition_penalty > 0.0f) || repetition_penalty > 100.0f) bad("repetition_penalty must be in (0, 100]");
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) bad("presence_penalty must be in [-2, 2]");
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) bad("frequency_penalty must be in [-2, 2]");
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
}

void Sampler::apply_penalties(float* logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  if (p_.repetition_penalty != 1.0f) {
    // Each distinct token seen once: the penalty does not compound with repeats.
    std::vector<uint8_t> seen(vocab_, 0);
    auto mark = [&](int32_t t) {
      if (t < 0 || t >= vocab_ || seen[t]) return;
      seen[t] = 1;
      logits[t] = logits[t] > 0 ? logits[t] / p_.repetition_penalty : logits[t] * p_.repetition_penalty;
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

int32_t Sampler::sample(float* logits, std::span<const int32_t> prompt, std::span<const int32_t> output) {
  apply_penalties(logits, prompt, output);
  if (p_.greedy()) return argmax(logits, vocab_);

  // Candidates sorted by logit, cut by top-k first (cheap partial sort), then top-p and min-p
  // on the temperature-scaled distribution.
  const int32_t k = p_.top_k > 0 ? std::min(p_.top_k, vocab_) : vocab_;
  cand_.resize(vocab_);
  for (int32_t i = 0; i < vocab_; ++i) cand_[i] = {logits[i], i};
  auto by_logit = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  // Sorting all of a 128k vocabulary per token is slow; the head holds nearly all the mass, so
  // sort a prefix and widen only if top-p needs more.
  const auto end = cand_.begin() + k;
  if (k < vocab_) std::nth_element(cand_.begin(), end, cand_.end(), by_logit);
  int32_t sorted = std::min<int32_t>(k, 1024);
  std::partial_sort(cand_.begin(), cand_.begin() + sorted, end, by_logit);
  const float inv_t = 1.0f / p_.temperature;
  const float mx = cand_[0].first;
  auto total_mass = [&]() {
    double z = 0;
    for (int32_t i = 0; i < k; ++i) z += std::exp(static_cast<double>(cand_[i].first - mx) * inv_t);
    return z;
  };
  double z = total_mass();
  int32_t n = k;
  if (p_.top_p < 1.0f) {
    for (;;) {
      double cum = 0;
      int32_t i = 0;
      for (; i < sorted; ++i) {
        cum += std::exp(static_cast<double>(cand_[i].first - mx) * inv_t);
        if (cum >= p_.top_p * z) break;
      }
      if (i < sorted || sorted == k) {
        n = std::min(k, i + 1);
        break;
      }
      const int32_t more = std::min(k, sorted * 8);
      std::partial_sort(cand_.begin() + sorted, cand_.begin() + more, end, by_logit);
      sorted = more;
    }
  }
  if (p_.min_p > 0.0f) {
    // p_i / p_max >= min_p  <=>  (l_i - l_max) / T >= ln(min_p)
    const double cut = std::log(static_cast<double>(p_.min_p));
    if (sorted < n) {
      std::partial_sort(cand_.begin() + sorted, cand_.begin() + n, end, by_logit);
      sorted = n;
    }
    int32_t keep = 1;
    while (keep < n && (cand_[keep].first - mx) * inv_t >= cut) ++keep;
    n = keep;
  }
  double mass = 0;
  for (int32_t i = 0; i < n; ++i) mass += std::exp(static_cast<double>(cand_[i].first - mx) * inv_t);
  const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * mass;
  double cum = 0;
  for (int32_t i = 0; i < n; ++i) {
    cum += std::exp(static_cast<double>(cand_[i].first - mx) * inv_t);
    if (r < cum) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

float Sampler::logprob_of(const float* logits, int32_t vocab_size, int32_t token) {
  const float mx = *std::max_element(logits, logits + vocab_size);
  double z = 0;
  for (int32_t i = 0; i < vocab_size; ++i) z += std::exp(static_cast<double>(logits[i] - mx));
  return static_cast<float>(logits[token] - mx - std::log(z));
}

std::vector<Sampler::TopLogprob> Sampler::top_logprobs(const float* logits, int32_t vocab_size, int n) {
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

}  // namespace sandwich
