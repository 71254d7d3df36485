// Embeddings and prompt logprobs through the scheduler, on the real stories260K model: held
// against the plain reference forward pass (the final hidden state after the final norm, pooled
// and normalized; each prompt token's log-probability), with one rank and with two, and the same
// whatever else shares the steps (other requests, chunked prefill).
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/scheduler.h"
#include "model_fixtures.h"
#include "runtime/forward.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

struct Result {
  std::vector<float> embedding;
  std::vector<int32_t> tokens;
  std::vector<PromptTokenLogprob> prompt_logprobs;
  int outputs_with_prompt_logprobs = 0;
  int32_t prompt_tokens = 0, cached_tokens = 0;
  FinishReason finish = FinishReason::None;
  std::string error;
};

// Submits all, waits for all.
std::vector<Result> run_all(Scheduler& s, std::vector<EngineRequest> rs) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result> out(rs.size());
  size_t finished = 0;
  for (size_t i = 0; i < rs.size(); ++i)
    rs[i].on_output = [&, i](const RequestOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      Result& r = out[i];
      r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
      if (!o.prompt_logprobs.empty()) {
        ++r.outputs_with_prompt_logprobs;
        r.prompt_logprobs = o.prompt_logprobs;
      }
      if (!o.embedding.empty()) r.embedding = o.embedding;
      r.error += o.error;
      r.prompt_tokens = o.prompt_tokens;
      r.cached_tokens = o.cached_tokens;
      if (o.finished) {
        r.finish = o.finish_reason;
        ++finished;
        cv.notify_all();
      }
    };
  s.submit(std::move(rs));
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == out.size(); }));
  return out;
}

std::vector<int32_t> some_tokens(int n, int salt, int vocab) {
  std::vector<int32_t> t{1};  // BOS
  for (int i = 1; i < n; ++i) t.push_back(259 + (i * 37 + salt * 101) % (vocab - 259));
  return t;
}

EngineRequest embed_request(std::vector<int32_t> prompt, Pooling p) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.embed = p;
  return r;
}

EngineRequest generate_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

// The reference: each token's hidden state, mean- or last-pooled, over unit L2 norm.
std::vector<float> reference_embedding(const Model& m, const std::vector<int32_t>& prompt,
                                       Pooling p) {
  ReferenceForward ref(m);
  std::vector<double> pooled(static_cast<size_t>(m.config.dim), 0.0);
  for (int32_t t : prompt) {
    ref.step(t);
    if (p == Pooling::Last) std::fill(pooled.begin(), pooled.end(), 0.0);
    for (size_t i = 0; i < pooled.size(); ++i) pooled[i] += ref.hidden()[i];
  }
  double norm = 0;
  for (double v : pooled) norm += v * v;
  std::vector<float> out;
  for (double v : pooled) out.push_back(static_cast<float>(v / std::sqrt(norm)));
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double norm = 0;
  for (float v : got) norm += static_cast<double>(v) * v;
  EXPECT_NEAR(norm, 1.0, 1e-5) << what << ": not of unit norm";
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

class EmbeddingStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::data_dir())) return;
    model_ = load_model(test::stories_load_options()).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  // An F32 KV cache, as the reference keeps; small chunks, so that prompts span several steps.
  static SchedulerOptions options(const std::string& config) {
    SchedulerOptions o;
    o.prefill_config = topotree::parse_service_config(config);
    o.max_model_len = 256;
    o.max_batched_tokens = 32;
    o.kv_cache_dtype = KVCacheDType::F32;
    return o;
  }
  const Model& model() const { return *model_; }
  int vocab() const { return model_->config.vocab_size; }
  static inline Model* model_ = nullptr;
};

// F32 everywhere: the fast path and the reference differ in summation order only.
constexpr double kTol = 2e-5;

TEST_F(EmbeddingStories, MeanAndLastPoolingEqualTheReference) {
  Scheduler s(model(), options("1x2"));
  const auto prompt = some_tokens(75, 1, vocab());  // three chunks of 32
  const auto r =
      run_all(s, {embed_request(prompt, Pooling::Mean), embed_request(prompt, Pooling::Last),
                  embed_request({1}, Pooling::Mean)});
  for (const Result& x : r) {
    ASSERT_TRUE(x.error.empty()) << x.error;
    EXPECT_EQ(x.finish, FinishReason::Stop);
    EXPECT_TRUE(x.tokens.empty());
  }
  EXPECT_EQ(r[0].prompt_tokens, 75);
  expect_close(r[0].embedding, reference_embedding(model(), prompt, Pooling::Mean), kTol, "mean");
  expect_close(r[1].embedding, reference_embedding(model(), prompt, Pooling::Last), kTol, "last");
  expect_close(r[2].embedding, reference_embedding(model(), {1}, Pooling::Mean), kTol, "one token");
}

TEST_F(EmbeddingStories, TwoRanksEqualTheReference) {
  Scheduler s(model(), options("2x1"));
  const auto prompt = some_tokens(50, 2, vocab());
  const auto r = run_all(s, {embed_request(prompt, Pooling::Mean)});
  ASSERT_TRUE(r[0].error.empty()) << r[0].error;
  expect_close(r[0].embedding, reference_embedding(model(), prompt, Pooling::Mean), kTol, "mean");
}

// The same embeddings whether each runs alone or beside others in chunked steps, and beside
// generations; a prompt whose blocks are cached (a second run) is computed whole again.
TEST_F(EmbeddingStories, BatchingDoesNotChangeTheEmbedding) {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(some_tokens(10 + 23 * i, 10 + i, vocab()));
  std::vector<std::vector<float>> solo;
  {
    SchedulerOptions o = options("1x2");
    o.max_batched_tokens = 512;
    o.enable_prefix_caching = false;
    Scheduler s(model(), o);
    for (const auto& p : prompts)
      solo.push_back(run_all(s, {embed_request(p, Pooling::Mean)})[0].embedding);
  }
  Scheduler s(model(), options("1x2"));
  for (int round = 0; round < 2; ++round) {
    std::vector<EngineRequest> rs;
    rs.push_back(generate_request(some_tokens(40, 7, vocab()), 20));
    for (const auto& p : prompts) rs.push_back(embed_request(p, Pooling::Mean));
    rs.push_back(generate_request(some_tokens(9, 8, vocab()), 20));
    const auto r = run_all(s, std::move(rs));
    EXPECT_EQ(r[0].tokens.size(), 20u);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_TRUE(r[i + 1].error.empty()) << r[i + 1].error;
      EXPECT_EQ(r[i + 1].cached_tokens, 0);
      // Steps of other sizes may sum in another order: float noise, no more.
      expect_close(r[i + 1].embedding, solo[i], 1e-5,
                   "round " + std::to_string(round) + " prompt " + std::to_string(i));
    }
  }
}

TEST_F(EmbeddingStories, APromptAsLongAsTheContextFits) {
  SchedulerOptions o = options("1x2");
  o.max_model_len = 64;
  o.kv_cache_bytes = KVCache::bytes_for_tokens(model().config, 64, KVCacheDType::F32);
  Scheduler s(model(), o);
  const auto r = run_all(s, {embed_request(some_tokens(64, 3, vocab()), Pooling::Last)});
  ASSERT_TRUE(r[0].error.empty()) << r[0].error;
  EXPECT_EQ(r[0].embedding.size(), static_cast<size_t>(model().config.dim));
  EXPECT_THROW(s.submit(embed_request(some_tokens(65, 3, vocab()), Pooling::Last)),
               std::invalid_argument);
}

// The reference's log-probability of each prompt token from the second on.
std::vector<std::vector<float>> reference_logits(const Model& m, const std::vector<int32_t>& p) {
  ReferenceForward ref(m);
  std::vector<std::vector<float>> rows;
  for (int32_t t : p) rows.push_back(ref.step(t));
  return rows;
}

void expect_prompt_logprobs(const Model& m, const std::vector<int32_t>& prompt, const Result& r,
                            int k) {
  const int32_t V = m.config.vocab_size;
  const auto rows = reference_logits(m, prompt);
  ASSERT_EQ(r.prompt_logprobs.size(), prompt.size() - 1);
  for (size_t j = 1; j < prompt.size(); ++j) {
    const PromptTokenLogprob& lp = r.prompt_logprobs[j - 1];
    const float* row = rows[j - 1].data();
    EXPECT_EQ(lp.token, prompt[j]);
    EXPECT_NEAR(lp.logprob, Sampler::logprob_of(row, V, prompt[j]), 1e-4) << "position " << j;
    EXPECT_EQ(lp.rank, Sampler::rank_of(row, V, prompt[j])) << "position " << j;
    const auto top = Sampler::top_logprobs(row, V, k);
    ASSERT_EQ(lp.top.size(), top.size());
    for (size_t i = 0; i < top.size(); ++i) EXPECT_NEAR(lp.top[i].logprob, top[i].logprob, 1e-4);
  }
}

EngineRequest prompt_logprobs_request(std::vector<int32_t> prompt, int k) {
  EngineRequest r = generate_request(std::move(prompt), 4);
  r.prompt_logprobs = k;
  return r;
}

TEST_F(EmbeddingStories, PromptLogprobsEqualTheReferenceAcrossChunks) {
  for (const char* config : {"1x2", "2x1"}) {
    SCOPED_TRACE(config);
    Scheduler s(model(), options(config));
    const auto prompt = some_tokens(70, 4, vocab());
    // Twice: the second finds the prompt's blocks cached and must compute them anyway.
    for (int round = 0; round < 2; ++round) {
      const auto r = run_all(
          s, {prompt_logprobs_request(prompt, 3), generate_request(some_tokens(33, 5, vocab()), 8),
              prompt_logprobs_request({1}, 2)});
      ASSERT_TRUE(r[0].error.empty()) << r[0].error;
      EXPECT_EQ(r[0].outputs_with_prompt_logprobs, 1);
      EXPECT_EQ(r[0].cached_tokens, 0);
      expect_prompt_logprobs(model(), prompt, r[0], 3);
      EXPECT_EQ(r[0].tokens.size(), 4u);
      // A prompt of one token has no logprob to give.
      EXPECT_TRUE(r[2].prompt_logprobs.empty());
      EXPECT_EQ(r[2].tokens.size(), 4u);
    }
  }
}

// More prompt tokens than a step keeps rows of logits for: the chunks are cut to fit.
TEST_F(EmbeddingStories, PromptLogprobsOfALongPromptInOneBigStepBudget) {
  SchedulerOptions o = options("1x2");
  o.max_model_len = 512;
  o.max_batched_tokens = 512;
  Scheduler s(model(), o);
  const auto prompt = some_tokens(400, 6, vocab());
  const auto r = run_all(s, {prompt_logprobs_request(prompt, 0)});
  ASSERT_TRUE(r[0].error.empty()) << r[0].error;
  expect_prompt_logprobs(model(), prompt, r[0], 0);
}

}  // namespace
}  // namespace sandwich::engine
