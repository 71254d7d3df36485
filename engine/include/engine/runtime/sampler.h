#pragma once
// Turning logits into the next token, with the sampling controls of the OpenAI / vLLM API.
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace sandwich::engine {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int32_t top_k = 0;                // 0 or -1 = all tokens
  float top_p = 1.0f;               // nucleus mass, (0, 1]
  float min_p = 0.0f;               // drop tokens below min_p * p(max), [0, 1]
  float repetition_penalty = 1.0f;  // > 0; on prompt and output tokens (HF/vLLM rule)
  float presence_penalty = 0.0f;    // [-2, 2]; on output tokens (OpenAI rule)
  float frequency_penalty = 0.0f;   // [-2, 2]; on output tokens
  std::optional<uint64_t> seed;
  // Added to the logits of these tokens before any cut (OpenAI's logit_bias: [-100, 100];
  // -100 bans a token, 100 all but forces it).
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Throws std::invalid_argument naming the field and its allowed range.
  void validate() const;
  bool greedy() const { return temperature <= 0.0f; }
};

// A rule on which tokens may come next (a grammar), applied after the penalties and biases and
// before any cut, so that every sampling mode draws only from the tokens it allows.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Whether one token is allowed: cheap, so greedy decoding asks it of its choice first.
  virtual bool allows(int32_t token) = 0;
  // Sets the logits of every token not allowed to -inf.
  virtual void mask(float* logits, int32_t vocab_size) = 0;
};

class Sampler {
 public:
  // Without a seed in params, draws from default_seed (callers pass a fresh random value).
  Sampler(const SamplingParams& params, int32_t vocab_size, uint64_t default_seed);

  // Picks the next token. logits (vocab_size values) are modified in place (penalties etc.).
  // With a constraint: only a token it allows, or -1 when it allows none.
  int32_t sample(float* logits, std::span<const int32_t> prompt, std::span<const int32_t> output,
                 TokenConstraint* constraint = nullptr);

  // Log-probabilities under the model's raw distribution: the logprob of `token` and the top n.
  struct TopLogprob {
    int32_t token;
    float logprob;
  };
  static float logprob_of(const float* logits, int32_t vocab_size, int32_t token);
  static std::vector<TopLogprob> top_logprobs(const float* logits, int32_t vocab_size, int n);
  // 1 + the tokens more likely than `token` (vLLM's rank: the top token is 1).
  static int32_t rank_of(const float* logits, int32_t vocab_size, int32_t token);

 private:
  void apply_penalties(float* logits, std::span<const int32_t> prompt,
                       std::span<const int32_t> output);
  SamplingParams p_;
  int32_t vocab_;
  std::mt19937_64 rng_;
  std::vector<int32_t> counts_;  // scratch: occurrences of each token in the output
  std::vector<float> weights_;   // scratch: exp((logit - max) / T) of each token
  std::vector<int32_t> ids_;     // scratch: candidate token ids
};

// A generated token's log-probability under the raw distribution, and the top n beside it.
struct TokenLogprob {
  int32_t token;
  float logprob;
  std::vector<Sampler::TopLogprob> top;
};

// A prompt token's log-probability given the tokens before it, its rank, and the top n there
// (vLLM's prompt_logprobs).
struct PromptTokenLogprob {
  int32_t token;
  float logprob;
  int32_t rank;
  std::vector<Sampler::TopLogprob> top;
};

// Greedy choice: the first index of the maximum.
int32_t argmax(const float* logits, int32_t n);

}  // namespace sandwich::engine
