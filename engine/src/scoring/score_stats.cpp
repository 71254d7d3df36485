#include "engine/scoring/score_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sandwich::engine {
namespace {

// llama-perplexity's mean and error: the error is left 0 for ten values or fewer.
Estimate mean_and_error(double sum, double sum2, int64_t n) {
  if (n < 1) return {};
  const double mean = sum / static_cast<double>(n);
  const double var = sum2 / static_cast<double>(n) - mean * mean;
  return {mean, var > 0 && n > 10 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0};
}

double covariance(double sum_a, double sum_b, double sum_ab, int64_t n) {
  if (n < 10) return 0;
  const double N = static_cast<double>(n);
  return (sum_ab / N - (sum_a / N) * (sum_b / N)) / (N - 1);
}

double quantile(std::vector<double> v, double f) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  if (f <= 0) return v.front();
  if (f >= 1) return v.back();
  const double p = f * static_cast<double>(v.size() - 1);
  const auto i = static_cast<size_t>(p);
  const double t = p - static_cast<double>(i);
  return (1 - t) * v[i] + t * v[std::min(i + 1, v.size() - 1)];
}

size_t first_max(std::span<const float> v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

void log_softmax(std::span<const float> logits, std::span<float> out) {
  if (logits.empty() || out.size() != logits.size())
    throw std::invalid_argument("log_softmax: " + std::to_string(logits.size()) + " logits into " +
                                std::to_string(out.size()) + " values");
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double shift = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i)
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - shift);
}

void PerplexityStats::add(double nll) {
  sum_ += nll;
  sum2_ += nll * nll;
  ++count_;
}

Estimate PerplexityStats::ppl() const {
  if (count_ < 1) return {};
  const double n = static_cast<double>(count_);
  const double mean = sum_ / n, var = sum2_ / n - mean * mean;
  const double ppl = std::exp(mean);
  return {ppl, var > 0 && count_ > 1 ? ppl * std::sqrt(var / (n - 1)) : 0.0};
}

void KLDivergenceStats::add(std::span<const float> base, std::span<const float> q, int32_t token) {
  if (base.size() != q.size() || base.empty() || token < 0 ||
      static_cast<size_t>(token) >= q.size())
    throw std::invalid_argument("KL divergence of rows of " + std::to_string(base.size()) +
                                " and " + std::to_string(q.size()) + " values at token " +
                                std::to_string(token));
  const double nll = -static_cast<double>(q[token]);
  const double nll_base = -static_cast<double>(base[token]);
  sum_nll_ += nll;
  sum_nll2_ += nll * nll;
  sum_nll_base_ += nll_base;
  sum_nll_base2_ += nll_base * nll_base;
  sum_nll_nll_base_ += nll * nll_base;
  double kld = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const double lp = base[i];
    kld += std::exp(lp) * (lp - static_cast<double>(q[i]));
  }
  sum_kld_ += kld;
  sum_kld2_ += kld * kld;
  kld_.push_back(kld);
  same_top_ += first_max(base) == first_max(q) ? 1 : 0;
  const double dp = std::exp(-nll) - std::exp(-nll_base);
  sum_dp_ += dp;
  sum_dp2_ += dp * dp;
  sum_dp4_ += dp * dp * dp * dp;
  dp_.push_back(dp);
  ++count_;
}

Estimate KLDivergenceStats::ppl() const {
  const Estimate l = mean_and_error(sum_nll_, sum_nll2_, count_);
  const double v = std::exp(l.value);
  return {v, v * l.error};
}

Estimate KLDivergenceStats::ppl_base() const {
  const Estimate l = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
  const double v = std::exp(l.value);
  return {v, v * l.error};
}

double KLDivergenceStats::ln_ppl_correlation() const {
  const Estimate a = mean_and_error(sum_nll_, sum_nll2_, count_);
  const Estimate b = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
  return a.error > 0 && b.error > 0 ? cov / (a.error * b.error) : 0.0;
}

Estimate KLDivergenceStats::ln_ppl_ratio() const {
  const Estimate a = mean_and_error(sum_nll_, sum_nll2_, count_);
  const Estimate b = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
  const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
  const double var = a.error * a.error + b.error * b.error - 2 * cov;
  return {a.value - b.value, var > 0 ? std::sqrt(var) : 0.0};
}

Estimate KLDivergenceStats::ppl_ratio() const {
  const Estimate r = ln_ppl_ratio();
  const double v = std::exp(r.value);
  return {v, v * r.error};
}

Estimate KLDivergenceStats::ppl_difference() const {
  const Estimate q = ppl(), b = ppl_base();
  const double cov =
      q.value * b.value * covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
  const double var = q.error * q.error + b.error * b.error - 2 * cov;
  return {q.value - b.value, var > 0 ? std::sqrt(var) : 0.0};
}

Estimate KLDivergenceStats::kld() const {
  return mean_and_error(sum_kld_, sum_kld2_, count_);
}

double KLDivergenceStats::kld_quantile(double f) const {
  return quantile(kld_, f);
}

Estimate KLDivergenceStats::delta_p() const {
  return mean_and_error(sum_dp_, sum_dp2_, count_);
}

double KLDivergenceStats::delta_p_quantile(double f) const {
  return quantile(dp_, f);
}

Estimate KLDivergenceStats::rms_delta_p() const {
  const Estimate mse = mean_and_error(sum_dp2_, sum_dp4_, count_);
  const double rms = std::sqrt(mse.value);
  return {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
}

Estimate KLDivergenceStats::same_top() const {
  if (count_ < 1) return {};
  const double p = static_cast<double>(same_top_) / static_cast<double>(count_);
  return {p, count_ > 1 ? std::sqrt(p * (1 - p) / static_cast<double>(count_ - 1)) : 0.0};
}

}  // namespace sandwich::engine
