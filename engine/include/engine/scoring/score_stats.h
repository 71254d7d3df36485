#pragma once
// The statistics llama-perplexity reports, over scored tokens: perplexity with its uncertainty,
// and the comparison of a model's next-token distributions with a base model's (KL divergence,
// how often the top token agrees, how the probability of the text's token moves).
#include <cstdint>
#include <span>
#include <vector>

namespace sandwich::engine {

// log p of every token of one row of logits, summed in double (stored as float, so two equal
// rows of logits give bitwise equal rows of log-probabilities).
void log_softmax(std::span<const float> logits, std::span<float> log_probs);

// A mean (or a quantity derived from means) and its standard error.
struct Estimate {
  double value = 0, error = 0;
};

// The negative log-likelihoods of the scored tokens: PPL = exp(mean NLL), its error
// PPL * sd(NLL) / sqrt(n - 1), as llama-perplexity's "Final estimate".
class PerplexityStats {
 public:
  void add(double nll);
  int64_t count() const { return count_; }
  Estimate ppl() const;

 private:
  double sum_ = 0, sum2_ = 0;
  int64_t count_ = 0;
};

// Token by token, a model's log-probabilities q against a base model's p (both over the whole
// vocabulary): KL(p || q) = sum p (log p - log q), whether argmax p = argmax q (the first index
// of the maximum, on either side), and dp = q(token) - p(token) of the text's next token. Means
// and errors follow llama-perplexity --kl-divergence (errors once there are more than 10 tokens).
class KLDivergenceStats {
 public:
  void add(std::span<const float> base_log_probs, std::span<const float> log_probs, int32_t token);
  int64_t count() const { return count_; }

  Estimate ppl() const;       // this model's, over the same tokens
  Estimate ppl_base() const;  // the base model's
  double ln_ppl_correlation() const;
  Estimate ln_ppl_ratio() const;  // ln(PPL / PPL(base))
  Estimate ppl_ratio() const;
  Estimate ppl_difference() const;

  Estimate kld() const;  // the mean
  // Interpolated between sorted values: 0 the minimum, 0.5 the median, 1 the maximum.
  double kld_quantile(double f) const;
  Estimate delta_p() const;  // the mean
  double delta_p_quantile(double f) const;
  Estimate rms_delta_p() const;
  Estimate same_top() const;  // a fraction

 private:
  double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_nll_nll_base_ = 0;
  double sum_kld_ = 0, sum_kld2_ = 0, sum_dp_ = 0, sum_dp2_ = 0, sum_dp4_ = 0;
  int64_t same_top_ = 0, count_ = 0;
  std::vector<double> kld_, dp_;  // per token, for the quantiles
};

}  // namespace sandwich::engine
