// The batch-invariant mode end to end: greedy requests run concurrently through the scheduler
// (prompts prefilled in chunks beside other prompts and decodes, decode batches that shrink as
// requests finish) give bitwise the tokens and logprobs they give alone.
#include <bit>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/plans/plan.h"
#include "engine/runtime/scheduler.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

// What a request produced: its tokens and, per token, the chosen and top logprobs.
struct Generated {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::string error;
  bool finished = false;
};

// A greedy request for prompt i: lengths differ, so requests finish at different steps.
struct Prompt {
  std::vector<int32_t> tokens;
  int32_t max_tokens;
};

// Runs the prompts as one submission and waits for all of them.
std::vector<Generated> run_together(Scheduler& s, const std::vector<Prompt>& prompts) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Generated> out(prompts.size());
  std::vector<EngineRequest> rs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EngineRequest r;
    r.prompt = prompts[i].tokens;
    r.max_tokens = prompts[i].max_tokens;
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.logprobs = 3;
    r.on_output = [&, i](const RequestOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      Generated& g = out[i];
      g.tokens.insert(g.tokens.end(), o.tokens.begin(), o.tokens.end());
      for (const TokenLogprob& lp : o.logprobs) {
        g.logprobs.push_back(lp.logprob);
        for (const auto& t : lp.top) g.logprobs.push_back(t.logprob);
      }
      g.error += o.error;
      g.finished = o.finished;
      cv.notify_all();
    };
    rs.push_back(std::move(r));
  }
  s.submit(std::move(rs));
  std::unique_lock<std::mutex> lock(mu);
  const bool done = cv.wait_for(lock, std::chrono::seconds(60), [&] {
    for (const Generated& g : out)
      if (!g.finished) return false;
    return true;
  });
  EXPECT_TRUE(done) << "requests did not finish";
  return out;
}

// Prompts of different lengths, some longer than a prefill step's budget.
std::vector<Prompt> prompts(int n, int vocab, int32_t max_tokens) {
  std::vector<Prompt> ps;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p(5 + (i * 23) % 70);
    for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<int32_t>((j * 31 + i * 7 + 3) % vocab);
    ps.push_back({std::move(p), max_tokens + i % 3});
  }
  return ps;
}

void expect_bitwise_equal(const Generated& together, const Generated& alone, size_t i) {
  ASSERT_TRUE(together.error.empty() && alone.error.empty()) << together.error << alone.error;
  ASSERT_EQ(together.tokens, alone.tokens) << "request " << i;
  ASSERT_EQ(together.logprobs.size(), alone.logprobs.size()) << "request " << i;
  for (size_t j = 0; j < alone.logprobs.size(); ++j)
    ASSERT_EQ(std::bit_cast<uint32_t>(together.logprobs[j]),
              std::bit_cast<uint32_t>(alone.logprobs[j]))
        << "request " << i << " logprob " << j << ": " << together.logprobs[j] << " vs "
        << alone.logprobs[j];
}

// Each prompt alone, then all of them together, in batch-invariant schedulers of `config`.
void expect_batch_invariant(const Model& model, const std::string& config, int n_prompts,
                            int32_t max_tokens) {
  SchedulerOptions o;
  o.batch_invariant = true;
  o.prefill_config = topotree::parse_service_config(config);
  o.max_batched_tokens = 48;  // long prompts are chunked, differently when others share the step
  o.max_model_len = 160;
  const auto ps = prompts(n_prompts, model.config.vocab_size, max_tokens);
  std::vector<Generated> alone;
  {
    Scheduler s(model, o);
    for (const auto& p : ps) alone.push_back(run_together(s, {p}).front());
  }
  Scheduler s(model, o);
  const std::vector<Generated> together = run_together(s, ps);
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_EQ(alone[i].tokens.size(), static_cast<size_t>(ps[i].max_tokens)) << alone[i].error;
    expect_bitwise_equal(together[i], alone[i], i);
  }
}

// A Llama with the proportions of a real one (head size 64, FFN 2.75x, GQA), small enough to
// run in a second: BF16 weights, whose GEMMs differ most between their M-dependent schedules.
std::unique_ptr<Model> dummy_bf16_llama(const test::TempDir& dir) {
  test::write_llama_config(dir.path(), {256, 2, 4, 2, 704, 1000, 256},
                           {{"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}});
  LoadOptions lo = test::dummy_weights(dir.path(), WeightDType::BF16);
  lo.threads = 2;
  return load_model(lo);
}

TEST(BatchInvariant, DummyBf16LlamaAloneEqualsTogether) {
  test::TempDir dir;
  expect_batch_invariant(*dummy_bf16_llama(dir), "1x2", 10, 12);
}

// Two tensor-parallel ranks: each rank's partial sums meet in the all-reduce in rank order.
TEST(BatchInvariant, TwoRanksAloneEqualsTogether) {
  test::TempDir dir;
  expect_batch_invariant(*dummy_bf16_llama(dir), "2x1", 6, 8);
}

TEST(BatchInvariant, Stories260KAloneEqualsTogether) {
  SANDWICH_REQUIRE_DATA();
  LoadOptions lo;
  lo.model = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  lo.tokenizer = test::data_dir() / "models/stories260K/tok512.bin";
  lo.threads = 2;
  auto model = load_model(lo);
  expect_batch_invariant(*model, "1x2", 10, 12);
}

}  // namespace
}  // namespace sandwich::engine
