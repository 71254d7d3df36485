// The Scheduler on its own, with a fake executor (fake_executor.h): admission, chunked prefill,
// preemption, cancellation, deadlines, shutdown, failing steps, finish reasons and stats. The
// fake records every step and makes greedy output a function of the cached context, so the
// steps' shapes and the tokens that come out can both be checked exactly.
#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/kv_cache.h"
#include "fake_executor.h"
#include "test_data.h"

namespace sandwich::engine {

// Readable failure messages.
void PrintTo(FinishReason r, std::ostream* os) {
  *os << (r == FinishReason::None ? "none" : finish_reason_name(r));
}
void PrintTo(AbortReason r, std::ostream* os) {
  static const char* names[] = {"None",     "Cancelled", "Timeout",
                                "Shutdown", "NoRoom",    "EngineError"};
  *os << names[static_cast<int>(r)];
}

namespace {

using test::FakeBackend;
using test::FakeEntry;
using test::FakeStep;
using Clock = std::chrono::steady_clock;

// What one request heard from the engine.
class Collector {
 public:
  std::function<void(const RequestOutput&)> sink() {
    return [this](const RequestOutput& o) {
      std::lock_guard<std::mutex> lock(mu_);
      outs_.push_back(o);
      cv_.notify_all();
    };
  }
  bool wait_finished() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return !outs_.empty() && outs_.back().finished; });
  }
  bool wait_outputs(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return outs_.size() >= n; });
  }
  std::vector<RequestOutput> outputs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outs_;
  }
  // The last output (the finished one, once finished).
  RequestOutput last() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outs_.empty() ? RequestOutput{} : outs_.back();
  }
  std::vector<int32_t> tokens() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int32_t> t;
    for (auto& o : outs_) t.insert(t.end(), o.tokens.begin(), o.tokens.end());
    return t;
  }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (auto& o : outs_) s += o.text;
    return s;
  }
  int finished_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (auto& o : outs_) n += o.finished;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RequestOutput> outs_;
};

// n distinct tokens from `first` on (ordinary pieces of the stories vocabulary); prompts of
// different requests start with different tokens, so a step's entry says whose it is.
std::vector<int32_t> prompt(int32_t first, int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(first + i);
  return p;
}

// Whether an entry is of the sequence of this prompt (an early chunk holds only its start).
bool belongs_to(const FakeEntry& e, const std::vector<int32_t>& prompt) {
  const size_t n = std::min(e.context.size(), prompt.size());
  return std::equal(prompt.begin(), prompt.begin() + n, e.context.begin());
}

// Indices of the steps that hold an entry of this prompt's sequence.
std::vector<size_t> steps_of(const std::vector<FakeStep>& steps, const std::vector<int32_t>& p) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < steps.size(); ++i)
    for (auto& e : steps[i].entries)
      if (belongs_to(e, p)) {
        idx.push_back(i);
        break;
      }
  return idx;
}

std::string phases(const std::vector<FakeStep>& steps) {
  std::string s;
  for (auto& st : steps) s += st.phase == "prefill" ? 'P' : 'D';
  return s;
}

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::data_dir())) return;
    LoadOptions o;
    o.model = (test::data_dir() / "models/stories260K/stories260K.bin").string();
    o.tokenizer = test::data_dir() / "models/stories260K/tok512.bin";
    model_ = load_model(o).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  void TearDown() override {
    fake.release();
    if (sched) sched->shutdown(false);
    for (auto& v : fake.violations()) ADD_FAILURE() << "executor contract: " << v;
  }

  const Model& model() const { return *model_; }
  int32_t vocab() const { return model_->config.vocab_size; }
  size_t block_bytes() const { return KVCache::block_bytes(model_->config); }

  // Prefill and decode under different configurations, so each phase gets its own fake
  // executor and every recorded step says which phase it was.
  SchedulerOptions options() {
    SchedulerOptions o;
    o.prefill_config = single_rank_config(1);
    o.decode_config = single_rank_config(2);
    o.executor_factory = fake.factory();
    return o;
  }
  // options() running one sequence at a time.
  SchedulerOptions one_at_a_time() {
    SchedulerOptions o = options();
    o.max_num_seqs = 1;
    return o;
  }
  // options() with a step budget of 4 tokens: prompts longer than that are prefilled in chunks.
  SchedulerOptions four_token_steps() {
    SchedulerOptions o = options();
    o.max_batched_tokens = 4;
    return o;
  }
  // options() with a KV cache of 4 blocks of 16 positions, and requests of up to 48.
  SchedulerOptions four_kv_blocks() {
    SchedulerOptions o = options();
    o.max_model_len = 48;
    o.kv_cache_bytes = 4 * block_bytes();
    return o;
  }
  Scheduler& start(const SchedulerOptions& o) {
    sched = std::make_unique<Scheduler>(model(), o);
    return *sched;
  }
  // Submits with the first step held, and waits for it: the requests that fit are in that step
  // and the rest wait, until fake.release(). False if the step never came.
  [[nodiscard]] bool submit_in_held_step(std::vector<EngineRequest> rs,
                                         std::vector<uint64_t>* ids = nullptr) {
    fake.hold_at(0);
    const auto submitted = sched->submit(std::move(rs));
    if (ids) *ids = submitted;
    return fake.wait_held(0);
  }
  EngineRequest request(std::vector<int32_t> p, int32_t max_tokens, Collector& c) {
    EngineRequest r;
    r.prompt = std::move(p);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.on_output = c.sink();
    return r;
  }
  // What greedy decoding under the fake's default script gives, run alone and unpreempted.
  std::vector<int32_t> expected_tokens(std::vector<int32_t> context, int n) const {
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(FakeBackend::hash_next(context, vocab()));
      context.push_back(out.back());
    }
    return out;
  }
  std::string text_of(const std::vector<int32_t>& p, const std::vector<int32_t>& tokens) const {
    IncrementalDecoder d(*model_->tokenizer, p.back());
    std::string s;
    for (int32_t t : tokens) s += d.push(t);
    return s + d.flush();
  }

  static inline Model* model_ = nullptr;
  // Declared before the scheduler: its executors and callbacks point into these.
  FakeBackend fake{model_ ? model_->config.vocab_size : 512};
  std::deque<Collector> collectors;
  std::unique_ptr<Scheduler> sched;

  Collector& collector() { return collectors.emplace_back(); }
  // Whether every request given a collector so far finishes (each within its time limit).
  bool all_finish() {
    for (auto& c : collectors)
      if (!c.wait_finished()) return false;
    return true;
  }
};

// ---- admission ----

TEST_F(SchedulerTest, RunsAtMostMaxNumSeqsAndAdmitsInArrivalOrder) {
  SchedulerOptions o = options();
  o.max_num_seqs = 2;
  Scheduler& s = start(o);
  std::vector<EngineRequest> rs;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) {
    prompts.push_back(prompt(300 + 10 * i, 3));
    rs.push_back(request(prompts.back(), 4, collector()));
  }
  ASSERT_TRUE(submit_in_held_step(std::move(rs)));
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.running, 2);
  EXPECT_EQ(st.waiting, 3);
  const FakeStep first = fake.steps()[0];
  ASSERT_EQ(first.entries.size(), 2u);
  EXPECT_TRUE(belongs_to(first.entries[0], prompts[0]));
  EXPECT_TRUE(belongs_to(first.entries[1], prompts[1]));
  fake.release();
  ASSERT_TRUE(all_finish());
  const auto steps = fake.steps();
  size_t prev_first = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto mine = steps_of(steps, prompts[i]);
    ASSERT_FALSE(mine.empty());
    EXPECT_GE(mine.front(), prev_first) << "request " << i << " overtook an earlier one";
    prev_first = mine.front();
    EXPECT_EQ(collectors[i].last().finish_reason, FinishReason::Length);
    EXPECT_EQ(collectors[i].tokens(), expected_tokens(prompts[i], 4));
  }
  for (auto& st2 : steps) EXPECT_LE(st2.entries.size(), 2u);
}

TEST_F(SchedulerTest, AHeadThatDoesNotFitIsNotOvertaken) {
  // 4 blocks of 16 positions; a 40-token prompt takes 3 of them.
  const auto a = prompt(300, 40), b = prompt(350, 40), c = prompt(400, 5);
  Scheduler& s = start(four_kv_blocks());
  ASSERT_TRUE(submit_in_held_step({request(a, 2, collector())}));
  s.submit({request(b, 2, collector()), request(c, 2, collector())});
  fake.release();
  ASSERT_TRUE(all_finish());
  const auto steps = fake.steps();
  const auto sb = steps_of(steps, b), sc = steps_of(steps, c);
  ASSERT_FALSE(sb.empty());
  ASSERT_FALSE(sc.empty());
  EXPECT_LE(sb.front(), sc.front()) << "the small request overtook the head of the queue";
  EXPECT_GT(sb.front(), steps_of(steps, a).back()) << "b cannot fit beside a";
}

TEST_F(SchedulerTest, AFullQueueRefusesAndASubmitOfSeveralIsAllOrNone) {
  SchedulerOptions o = one_at_a_time();
  o.max_waiting = 2;
  Scheduler& s = start(o);
  // Running: the queue is empty again.
  ASSERT_TRUE(submit_in_held_step({request(prompt(300, 3), 2, collector())}));
  s.submit(request(prompt(310, 3), 2, collector()));
  EXPECT_EQ(s.stats().waiting, 1);
  Collector& c1 = collector();
  Collector& c2 = collector();
  EXPECT_THROW(s.submit({request(prompt(320, 3), 2, c1), request(prompt(330, 3), 2, c2)}),
               QueueFull);
  EXPECT_EQ(s.stats().waiting, 1) << "half of a refused submit was queued";
  Collector& c3 = collector();
  s.submit(request(prompt(340, 3), 2, c3));
  Collector& c4 = collector();
  EXPECT_THROW(s.submit(request(prompt(350, 3), 2, c4)), QueueFull);
  // More than the queue could ever hold at once: a request error, not a retry-later.
  std::vector<EngineRequest> three;
  for (int i = 0; i < 3; ++i) three.push_back(request(prompt(360 + 10 * i, 3), 2, c4));
  EXPECT_THROW(s.submit(std::move(three)), std::invalid_argument);
  fake.release();
  s.shutdown(true);
  EXPECT_EQ(collectors[0].last().finish_reason, FinishReason::Length);
  EXPECT_EQ(collectors[1].last().finish_reason, FinishReason::Length);
  EXPECT_EQ(c3.last().finish_reason, FinishReason::Length);
  EXPECT_TRUE(c1.outputs().empty());
  EXPECT_TRUE(c2.outputs().empty());
  EXPECT_TRUE(c4.outputs().empty());
  EXPECT_EQ(s.stats().finished_length, 3u);
}

TEST_F(SchedulerTest, InvalidRequestsThrowInvalidArgument) {
  SchedulerOptions o = options();
  o.max_model_len = 64;
  Scheduler& s = start(o);
  Collector& c = collector();
  auto bad = [&](auto edit) {
    EngineRequest r = request(prompt(300, 4), 4, c);
    edit(r);
    return r;
  };
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.prompt.clear(); })), std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.max_tokens = 0; })), std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.max_tokens = 61; })), std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.prompt = prompt(300, 64); })),
               std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.prompt[1] = -1; })), std::invalid_argument);
  EXPECT_THROW(s.submit(bad([&](EngineRequest& r) { r.prompt[1] = vocab(); })),
               std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.sampling.temperature = -1; })),
               std::invalid_argument);
  EXPECT_THROW(s.submit(bad([](EngineRequest& r) { r.sampling.top_p = 0; })),
               std::invalid_argument);
  // The largest request that fits is fine.
  Collector& ok = collector();
  s.submit(request(prompt(300, 60), 4, ok));
  ASSERT_TRUE(ok.wait_finished());
  EXPECT_EQ(ok.last().finish_reason, FinishReason::Length);
  EXPECT_TRUE(c.outputs().empty());
}

TEST_F(SchedulerTest, ABadSequenceInASubmitOfSeveralQueuesNone) {
  // Regression: a logit_bias naming a token outside the vocabulary was caught only while the
  // sequences were being queued, after the ones before it were in (and would run unheard of).
  Scheduler& s = start(options());
  Collector& good = collector();
  Collector& bad = collector();
  EngineRequest r = request(prompt(310, 3), 2, bad);
  r.sampling.logit_bias = {{vocab() + 5, 1.0f}};
  std::vector<EngineRequest> rs;
  rs.push_back(request(prompt(300, 3), 2, good));
  rs.push_back(std::move(r));
  EXPECT_THROW(s.submit(std::move(rs)), std::invalid_argument);
  EXPECT_EQ(s.stats().waiting, 0);
  s.shutdown(true);
  EXPECT_TRUE(good.outputs().empty());
  EXPECT_TRUE(fake.steps().empty());
}

TEST_F(SchedulerTest, BadOptionsThrowInvalidArgument) {
  SchedulerOptions o = options();
  o.max_num_seqs = 0;
  EXPECT_THROW({ Scheduler s(model(), o); }, std::invalid_argument);
  o = options();
  o.max_batched_tokens = 0;
  EXPECT_THROW({ Scheduler s(model(), o); }, std::invalid_argument);
  o = options();
  o.max_model_len = 64;  // 4 blocks
  o.kv_cache_bytes = 3 * block_bytes();
  EXPECT_THROW({ Scheduler s(model(), o); }, std::invalid_argument);
}

// ---- the executors a scheduler makes ----

TEST_F(SchedulerTest, OneConfigurationMakesOneExecutorForBothPhases) {
  SchedulerOptions o;
  o.executor_factory = fake.factory();
  Scheduler& s = start(o);
  Collector& c = collector();
  s.submit(request(prompt(300, 3), 3, c));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(fake.executors_made(), 1);
  EXPECT_EQ(phases(fake.steps()), "PPP");  // one executor: every step is "prefill"'s
}

TEST_F(SchedulerTest, EachPhaseRunsOnItsOwnExecutor) {
  Scheduler& s = start(options());
  Collector& c = collector();
  s.submit(request(prompt(300, 3), 3, c));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(fake.executors_made(), 2);
  EXPECT_EQ(phases(fake.steps()), "PDD");
}

// ---- chunked prefill ----

TEST_F(SchedulerTest, APromptIsPrefilledInChunksOfTheTokenBudget) {
  Scheduler& s = start(four_token_steps());
  const auto p = prompt(300, 10);
  Collector& c = collector();
  s.submit(request(p, 2, c));
  ASSERT_TRUE(c.wait_finished());
  const auto steps = fake.steps();
  ASSERT_EQ(phases(steps), "PPPD");
  const int32_t starts[] = {0, 4, 8, 10}, sizes[] = {4, 4, 2, 1};
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i].entries.size(), 1u);
    const FakeEntry& e = steps[i].entries[0];
    EXPECT_EQ(e.start_pos, starts[i]) << "step " << i;
    EXPECT_EQ(e.tokens.size(), static_cast<size_t>(sizes[i])) << "step " << i;
    EXPECT_EQ(e.want_logits, i >= 2) << "logits only once the prompt is in, step " << i;
  }
  EXPECT_EQ(steps[2].entries[0].context, p);
  EXPECT_EQ(c.tokens(), expected_tokens(p, 2));
  EXPECT_EQ(c.last().prompt_tokens, 10);
  EXPECT_EQ(c.last().completion_tokens, 2);
}

TEST_F(SchedulerTest, PrefillAndDecodeStepsAlternateWhileBothHaveWork) {
  Scheduler& s = start(four_token_steps());
  const auto a = prompt(300, 3), b = prompt(350, 11);
  Collector& ca = collector();
  Collector& cb = collector();
  s.submit({request(a, 6, ca), request(b, 6, cb)});
  ASSERT_TRUE(all_finish());
  const auto steps = fake.steps();
  // a's 3 tokens and 1 of b's fill the first budget; then b's chunks take turns with a's
  // decodes, and once b is in both decode together.
  EXPECT_EQ(phases(steps), "PDPDPDPDDDDD");
  std::vector<std::pair<int32_t, size_t>> b_prefill;  // (start, size) of b's prefill chunks
  for (auto& st : steps) {
    EXPECT_LE(st.entries.size(), 2u);
    if (st.phase == "prefill") {
      EXPECT_LE(st.tokens(), 4);
      for (auto& e : st.entries)
        if (belongs_to(e, b)) b_prefill.emplace_back(e.start_pos, e.tokens.size());
    }
  }
  const std::vector<std::pair<int32_t, size_t>> want = {{0, 1}, {1, 4}, {5, 4}, {9, 2}};
  EXPECT_EQ(b_prefill, want);
  EXPECT_EQ(ca.tokens(), expected_tokens(a, 6));
  EXPECT_EQ(cb.tokens(), expected_tokens(b, 6));
}

// ---- preemption ----

TEST_F(SchedulerTest, RunningOutOfKvBlocksPreemptsTheNewestWhichRecomputesToTheSameOutput) {
  // 4 blocks; each sequence grows to 40 positions (3 blocks): they cannot both finish at once.
  // Without prefix caching the preempted sequence recomputes everything (see "prefix caching"
  // below for it with).
  SchedulerOptions o = four_kv_blocks();
  o.enable_prefix_caching = false;
  Scheduler& s = start(o);
  const auto a = prompt(300, 10), b = prompt(350, 10);
  Collector& ca = collector();
  Collector& cb = collector();
  s.submit({request(a, 30, ca), request(b, 30, cb)});
  ASSERT_TRUE(all_finish());
  s.shutdown(true);
  EXPECT_EQ(ca.last().finish_reason, FinishReason::Length);
  EXPECT_EQ(cb.last().finish_reason, FinishReason::Length);
  const auto want_a = expected_tokens(a, 30), want_b = expected_tokens(b, 30);
  EXPECT_EQ(ca.tokens(), want_a);
  EXPECT_EQ(cb.tokens(), want_b) << "the preempted sequence's output changed";
  EXPECT_EQ(cb.text(), text_of(b, want_b));
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.preemptions, 1u);
  // b (the newest) was the one preempted: it is prefilled again from position 0 with its prompt
  // and what it had generated, after a is done.
  const auto steps = fake.steps();
  const auto sa = steps_of(steps, a);
  int b_prefills = 0;
  int32_t recomputed = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    for (auto& e : steps[i].entries)
      if (belongs_to(e, b) && e.start_pos == 0) {
        ++b_prefills;
        if (b_prefills == 2) {
          EXPECT_GT(i, sa.back()) << "b came back before a finished";
          recomputed = static_cast<int32_t>(e.tokens.size());
          EXPECT_GT(recomputed, 10);
          EXPECT_TRUE(std::equal(want_b.begin(), want_b.begin() + (recomputed - 10),
                                 e.tokens.begin() + 10));
        }
      }
  EXPECT_EQ(b_prefills, 2);
  EXPECT_EQ(st.prompt_tokens, 20u + recomputed) << "recomputation counts as prompt tokens";
  EXPECT_EQ(st.generation_tokens, 60u);
  for (auto& step : steps) EXPECT_LE(step.kv_used_blocks, 4);
  EXPECT_EQ(st.kv_blocks_used, 0);
}

// ---- prefix caching ----

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The first entry of a step holding a prefill chunk of this prompt's sequence.
const FakeEntry* first_prefill(const std::vector<FakeStep>& steps, const std::vector<int32_t>& p) {
  for (auto& st : steps)
    for (auto& e : st.entries)
      if (belongs_to(e, p) && e.tokens.size() > 1) return &e;
  return nullptr;
}

TEST_F(SchedulerTest, APromptSharingCachedBlocksSkipsTheirPrefill) {
  Scheduler& s = start(options());
  const auto shared = prompt(300, 40);  // 2 full blocks and 8 tokens
  const auto a = concat(shared, prompt(360, 5)), b = concat(shared, prompt(380, 9));
  Collector& ca = collector();
  s.submit(request(a, 4, ca));
  ASSERT_TRUE(ca.wait_finished());
  EXPECT_EQ(ca.last().cached_tokens, 0);
  Collector& cb = collector();
  s.submit(request(b, 4, cb));
  ASSERT_TRUE(cb.wait_finished());
  const auto steps = fake.steps();
  const FakeEntry* e = first_prefill(steps, b);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->start_pos, 32) << "the two full blocks of the shared prefix are not computed again";
  EXPECT_EQ(e->tokens.size(), b.size() - 32);
  EXPECT_EQ(e->context, b) << "the cached blocks hold the prefix";
  EXPECT_EQ(cb.tokens(), expected_tokens(b, 4));
  EXPECT_EQ(cb.last().cached_tokens, 32);
  EXPECT_EQ(cb.outputs().front().cached_tokens, 32);
  s.shutdown(true);
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.prefix_cache_queries, a.size() + b.size());
  EXPECT_EQ(st.prefix_cache_hits, 32u);
  EXPECT_EQ(st.prompt_tokens, a.size() + b.size() - 32);
  EXPECT_EQ(st.kv_blocks_used, 0);
  // a's 3 full blocks (its 45 prompt tokens and 3 generated ones), and b's third.
  EXPECT_EQ(st.kv_blocks_cached, 4);
}

TEST_F(SchedulerTest, WithPrefixCachingOffEveryPromptIsPrefilledWhole) {
  SchedulerOptions o = options();
  o.enable_prefix_caching = false;
  Scheduler& s = start(o);
  const auto p = prompt(300, 40);
  for (int i = 0; i < 2; ++i) {
    Collector& c = collector();
    s.submit(request(p, 3, c));
    ASSERT_TRUE(c.wait_finished());
    EXPECT_EQ(c.tokens(), expected_tokens(p, 3));
    EXPECT_EQ(c.last().cached_tokens, 0);
  }
  for (auto& st : fake.steps())
    for (auto& e : st.entries) EXPECT_TRUE(e.start_pos == 0 || e.tokens.size() == 1);
  s.shutdown(true);
  EXPECT_EQ(s.stats().prefix_cache_queries + s.stats().prefix_cache_hits, 0u);
  EXPECT_EQ(s.stats().kv_blocks_cached, 0);
}

TEST_F(SchedulerTest, UnderATinyKvBudgetTheLeastRecentlyUsedBlocksAreEvicted) {
  Scheduler& s = start(four_kv_blocks());  // 4 blocks, 48 positions per request at most
  const auto a = prompt(300, 33), c = prompt(400, 40);
  Collector& ca = collector();
  s.submit(request(a, 2, ca));
  ASSERT_TRUE(ca.wait_finished());
  // a's 2 full blocks are cached. c needs 3 blocks with 2 free: a's last full block goes, its
  // first stays.
  Collector& cc = collector();
  s.submit(request(c, 2, cc));
  ASSERT_TRUE(cc.wait_finished());
  Collector& ca2 = collector();
  s.submit(request(a, 2, ca2));
  ASSERT_TRUE(ca2.wait_finished());
  const auto steps = fake.steps();
  std::vector<int32_t> starts;
  for (auto& st : steps)
    for (auto& e : st.entries)
      if (belongs_to(e, a) && e.tokens.size() > 1) starts.push_back(e.start_pos);
  EXPECT_EQ(starts, (std::vector<int32_t>{0, 16}));
  EXPECT_EQ(ca2.tokens(), expected_tokens(a, 2));
  EXPECT_EQ(cc.tokens(), expected_tokens(c, 2));
  for (auto& st : steps) EXPECT_LE(st.kv_used_blocks, 4);
  // Nothing leaked: a request needing every block still runs, evicting all that is cached.
  Collector& all = collector();
  s.submit(request(prompt(450, 47), 1, all));
  ASSERT_TRUE(all.wait_finished());
  EXPECT_EQ(all.last().finish_reason, FinishReason::Length) << all.last().error;
  s.shutdown(true);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

TEST_F(SchedulerTest, APreemptedSequenceDropsOnlyItsReferencesAndFindsItsBlocksOnResume) {
  // 5 blocks. a and b share 2 full blocks and grow to 60 positions (4 blocks each, 6 together):
  // b, the newest, is preempted; a keeps reading the shared blocks.
  SchedulerOptions o = options();
  o.max_model_len = 64;
  o.kv_cache_bytes = 5 * block_bytes();
  Scheduler& s = start(o);
  const auto shared = prompt(300, 32);
  const auto a = concat(shared, prompt(350, 3)), b = concat(shared, prompt(380, 3));
  Collector& ca = collector();
  Collector& cb = collector();
  fake.hold_at(1);  // a's first decode: a's prefill is done, b comes now
  s.submit(request(a, 25, ca));
  ASSERT_TRUE(fake.wait_held(1));
  s.submit(request(b, 25, cb));
  fake.release();
  ASSERT_TRUE(all_finish());
  s.shutdown(true);
  EXPECT_EQ(ca.tokens(), expected_tokens(a, 25));
  EXPECT_EQ(cb.tokens(), expected_tokens(b, 25)) << "the preempted sequence's output changed";
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.preemptions, 1u);
  // b computes the 3 tokens after the shared blocks, then one at a time. Preempted at 48
  // positions (3 full blocks, its own third one cached when it let go), it resumes after a is
  // done exactly where it stopped: nothing is computed twice.
  const auto steps = fake.steps();
  const size_t a_last = steps_of(steps, a).back();
  std::vector<std::pair<int32_t, size_t>> b_entries;
  size_t resumed_step = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    for (auto& e : steps[i].entries)
      if (belongs_to(e, b)) {
        b_entries.emplace_back(e.start_pos, e.tokens.size());
        if (e.start_pos == 48) resumed_step = i;
      }
  ASSERT_FALSE(b_entries.empty());
  EXPECT_EQ(b_entries[0], (std::pair<int32_t, size_t>{32, 3}));
  for (size_t i = 1; i < b_entries.size(); ++i)
    EXPECT_EQ(b_entries[i].first,
              b_entries[i - 1].first + static_cast<int32_t>(b_entries[i - 1].second))
        << "b computed positions again";
  EXPECT_GT(resumed_step, a_last) << "b was not preempted at 48 positions";
  EXPECT_EQ(cb.last().cached_tokens, 32) << "cached tokens are those of the first admission";
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_GT(st.kv_blocks_cached, 0);
}

TEST_F(SchedulerTest, CancellingASequenceThatSharesBlocksLeavesTheOtherAlone) {
  Scheduler& s = start(options());
  const auto shared = prompt(300, 32);
  const auto a = concat(shared, prompt(350, 3)), b = concat(shared, prompt(380, 3));
  Collector& ca = collector();
  Collector& cb = collector();
  fake.hold_at(1);
  s.submit(request(a, 20, ca));
  ASSERT_TRUE(fake.wait_held(1));
  const uint64_t id_b = s.submit(request(b, 20, cb));
  fake.release(4);
  ASSERT_TRUE(fake.wait_held(4));
  s.cancel(id_b);
  fake.release();
  ASSERT_TRUE(all_finish());
  EXPECT_EQ(cb.last().abort_reason, AbortReason::Cancelled);
  EXPECT_EQ(cb.last().cached_tokens, 32);
  EXPECT_EQ(ca.tokens(), expected_tokens(a, 20));
  // The shared blocks are still cached for the next one.
  Collector& cc = collector();
  const auto c = concat(shared, prompt(400, 2));
  s.submit(request(c, 2, cc));
  ASSERT_TRUE(cc.wait_finished());
  EXPECT_EQ(cc.last().cached_tokens, 32);
  EXPECT_EQ(cc.tokens(), expected_tokens(c, 2));
  s.shutdown(true);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

// ---- cancellation ----

TEST_F(SchedulerTest, CancellingAWaitingRequestAbortsItBeforeItRuns) {
  Scheduler& s = start(one_at_a_time());
  const auto a = prompt(300, 3), b = prompt(350, 3);
  Collector& ca = collector();
  Collector& cb = collector();
  std::vector<uint64_t> ids;
  ASSERT_TRUE(submit_in_held_step({request(a, 3, ca), request(b, 3, cb)}, &ids));
  s.cancel(ids[1]);
  s.cancel(12345);  // unknown: ignored
  fake.release();
  ASSERT_TRUE(all_finish());
  s.shutdown(true);
  ASSERT_EQ(cb.outputs().size(), 1u);
  EXPECT_EQ(cb.last().finish_reason, FinishReason::Abort);
  EXPECT_EQ(cb.last().abort_reason, AbortReason::Cancelled);
  EXPECT_EQ(cb.last().completion_tokens, 0);
  EXPECT_TRUE(steps_of(fake.steps(), b).empty());
  EXPECT_EQ(ca.last().finish_reason, FinishReason::Length);
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.finished_abort, 1u);
  EXPECT_EQ(st.finished_length, 1u);
  EXPECT_EQ(st.waiting, 0);
}

TEST_F(SchedulerTest, CancellingARunningRequestFreesItsBlocksAtTheNextStep) {
  Scheduler& s = start(options());
  const auto a = prompt(300, 20), b = prompt(350, 5);  // a: 2 blocks, b: 1
  Collector& ca = collector();
  Collector& cb = collector();
  fake.hold_at(2);
  const auto ids = s.submit({request(a, 20, ca), request(b, 20, cb)});
  ASSERT_TRUE(fake.wait_held(2));
  EXPECT_EQ(fake.steps()[2].kv_used_blocks, 3);
  s.cancel(ids[0]);
  fake.release(3);
  ASSERT_TRUE(fake.wait_held(3));
  const FakeStep next = fake.steps()[3];
  // b's block, and a's full first block, which the prefix cache keeps (held by none).
  EXPECT_EQ(next.kv_used_blocks, 2);
  EXPECT_EQ(s.stats().kv_blocks_used, 1);
  EXPECT_EQ(s.stats().kv_blocks_cached, 1);
  ASSERT_EQ(next.entries.size(), 1u);
  EXPECT_TRUE(belongs_to(next.entries[0], b));
  fake.release();
  ASSERT_TRUE(all_finish());
  EXPECT_EQ(ca.last().finish_reason, FinishReason::Abort);
  EXPECT_EQ(ca.last().abort_reason, AbortReason::Cancelled);
  EXPECT_EQ(ca.last().completion_tokens, 3);  // the prefill's token and two decodes
  EXPECT_EQ(ca.tokens(), expected_tokens(a, 3));
  EXPECT_EQ(cb.tokens(), expected_tokens(b, 20));
  EXPECT_EQ(steps_of(fake.steps(), a).back(), 2u);
  s.shutdown(true);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

TEST_F(SchedulerTest, OnOutputMayCancelItsOwnRequest) {
  Scheduler& s = start(options());
  Collector& c = collector();
  struct Ids {
    std::atomic<uint64_t> id{0};
    std::atomic<int> seen{0};
  };
  auto ids = std::make_shared<Ids>();  // outlives the test body if it fails early
  EngineRequest r = request(prompt(300, 3), 50, c);
  r.on_output = [ids, sink = c.sink(), &s](const RequestOutput& o) {
    sink(o);
    if (++ids->seen == 2) s.cancel(ids->id.load());
  };
  fake.hold_at(0);
  ids->id = s.submit(std::move(r));
  fake.release();
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(c.last().abort_reason, AbortReason::Cancelled);
  EXPECT_EQ(c.tokens().size(), 2u);
  s.shutdown(true);
}

// ---- deadlines ----

TEST_F(SchedulerTest, ARequestPastItsDeadlineTimesOutWaitingOrRunning) {
  Scheduler& s = start(options());
  Collector& late = collector();
  EngineRequest r = request(prompt(300, 3), 4, late);
  r.deadline = Clock::now() - std::chrono::milliseconds(1);
  s.submit(std::move(r));
  ASSERT_TRUE(late.wait_finished());
  EXPECT_EQ(late.last().finish_reason, FinishReason::Abort);
  EXPECT_EQ(late.last().abort_reason, AbortReason::Timeout);
  EXPECT_TRUE(fake.steps().empty());

  Collector& slow = collector();
  r = request(prompt(350, 3), 100, slow);
  const auto deadline = Clock::now() + std::chrono::milliseconds(50);
  r.deadline = deadline;
  fake.hold_at(1);
  s.submit(std::move(r));
  ASSERT_TRUE(fake.wait_held(1));
  std::this_thread::sleep_until(deadline + std::chrono::milliseconds(1));  // the condition itself
  fake.release();
  ASSERT_TRUE(slow.wait_finished());
  EXPECT_EQ(slow.last().abort_reason, AbortReason::Timeout);
  EXPECT_EQ(slow.last().completion_tokens, 2);
  EXPECT_EQ(fake.steps().size(), 2u);
  s.shutdown(true);
  EXPECT_EQ(s.stats().finished_abort, 2u);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

// ---- shutdown ----

TEST_F(SchedulerTest, ShutdownWithFinishDrainsRunningAndWaitingWork) {
  Scheduler& s = start(one_at_a_time());
  std::vector<EngineRequest> rs;
  for (int i = 0; i < 3; ++i) rs.push_back(request(prompt(300 + 10 * i, 3), 3, collector()));
  ASSERT_TRUE(submit_in_held_step(std::move(rs)));
  s.request_shutdown(true);
  Collector& refused = collector();
  EXPECT_THROW(s.submit(request(prompt(400, 3), 3, refused)), QueueFull);
  fake.release();
  s.shutdown(true);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(collectors[i].last().finish_reason, FinishReason::Length) << i;
    EXPECT_EQ(collectors[i].tokens().size(), 3u) << i;
  }
  EXPECT_TRUE(refused.outputs().empty());
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.finished_length, 3u);
  EXPECT_EQ(st.running + st.waiting + st.kv_blocks_used, 0);
}

TEST_F(SchedulerTest, ShutdownWithoutFinishAbortsRunningAndWaitingWork) {
  Scheduler& s = start(one_at_a_time());
  Collector& ca = collector();
  Collector& cb = collector();
  ASSERT_TRUE(
      submit_in_held_step({request(prompt(300, 3), 10, ca), request(prompt(350, 3), 10, cb)}));
  s.request_shutdown(false);
  fake.release();
  s.shutdown(false);
  for (Collector* c : {&ca, &cb}) {
    EXPECT_EQ(c->finished_count(), 1);
    EXPECT_EQ(c->last().finish_reason, FinishReason::Abort);
    EXPECT_EQ(c->last().abort_reason, AbortReason::Shutdown);
  }
  EXPECT_EQ(ca.last().completion_tokens, 1);  // the step under way still delivered its token
  EXPECT_EQ(cb.last().completion_tokens, 0);
  EXPECT_EQ(fake.steps().size(), 1u);
  EXPECT_EQ(s.stats().finished_abort, 2u);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

TEST_F(SchedulerTest, ALaterShutdownWithoutFinishTurnsADrainIntoAnAbort) {
  Scheduler& s = start(one_at_a_time());
  Collector& ca = collector();
  Collector& cb = collector();
  ASSERT_TRUE(
      submit_in_held_step({request(prompt(300, 3), 10, ca), request(prompt(350, 3), 10, cb)}));
  s.request_shutdown(true);
  s.request_shutdown(false);
  fake.release();
  s.shutdown(true);  // finish = true cannot turn it back
  EXPECT_EQ(ca.last().abort_reason, AbortReason::Shutdown);
  EXPECT_EQ(cb.last().abort_reason, AbortReason::Shutdown);
}

TEST_F(SchedulerTest, TheDestructorAbortsWhatIsLeft) {
  Collector& ca = collector();
  Collector& cb = collector();
  {
    Scheduler s(model(), one_at_a_time());
    // Slow steps: a is still far from done (100 steps of 20 ms) when the destructor runs.
    fake.set_delay(std::chrono::milliseconds(20));
    s.submit({request(prompt(300, 3), 100, ca), request(prompt(350, 3), 100, cb)});
    ASSERT_TRUE(ca.wait_outputs(1));
  }
  EXPECT_EQ(ca.last().abort_reason, AbortReason::Shutdown);
  EXPECT_EQ(cb.last().abort_reason, AbortReason::Shutdown);
}

// ---- failing steps ----

TEST_F(SchedulerTest, AFailedStepFailsOnlyTheSequencesInIt) {
  // Regression: every running sequence used to be aborted, also those the step did not hold.
  Scheduler& s = start(four_token_steps());
  const auto a = prompt(300, 2), b = prompt(350, 11);
  Collector& ca = collector();
  Collector& cb = collector();
  fake.fail_once([](const FakeStep& st) { return st.phase == "decode"; });  // a's first decode
  s.submit({request(a, 10, ca), request(b, 3, cb)});
  ASSERT_TRUE(all_finish());
  EXPECT_EQ(ca.last().finish_reason, FinishReason::Abort);
  EXPECT_EQ(ca.last().abort_reason, AbortReason::EngineError);
  EXPECT_NE(ca.last().error.find("injected failure at step 1"), std::string::npos)
      << ca.last().error;
  EXPECT_EQ(cb.last().finish_reason, FinishReason::Length) << cb.last().error;
  EXPECT_EQ(cb.tokens(), expected_tokens(b, 3));
  s.shutdown(true);
  EXPECT_EQ(s.stats().kv_blocks_used, 0);
}

TEST_F(SchedulerTest, AFailedPrefillFailsItsSequencesAndTheSchedulerGoesOn) {
  Scheduler& s = start(options());
  Collector& ca = collector();
  Collector& cb = collector();
  fake.fail_once([](const FakeStep&) { return true; });
  s.submit({request(prompt(300, 5), 4, ca), request(prompt(350, 5), 4, cb)});
  ASSERT_TRUE(all_finish());
  for (Collector* c : {&ca, &cb}) {
    EXPECT_EQ(c->outputs().size(), 1u);
    EXPECT_EQ(c->last().abort_reason, AbortReason::EngineError);
    EXPECT_NE(c->last().error.find("engine error"), std::string::npos);
  }
  Collector& later = collector();
  s.submit(request(prompt(400, 5), 4, later));
  ASSERT_TRUE(later.wait_finished());
  EXPECT_EQ(later.last().finish_reason, FinishReason::Length);
  EXPECT_EQ(later.tokens(), expected_tokens(prompt(400, 5), 4));
}

// ---- finish reasons and output ----

TEST_F(SchedulerTest, AStopTokenFinishesWithStopUnlessEosIsIgnored) {
  Scheduler& s = start(options());
  const int32_t eos = model().tokenizer->stop_ids().at(0);
  const auto p = prompt(300, 3);
  const std::vector<int32_t> script = {400, 401, eos, 402, 403, 404};
  fake.set_script([&](std::span<const int32_t> ctx) { return script.at(ctx.size() - p.size()); });
  Collector& stop = collector();
  s.submit(request(p, 5, stop));
  ASSERT_TRUE(stop.wait_finished());
  EXPECT_EQ(stop.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(stop.tokens(), (std::vector<int32_t>{400, 401}));  // the stop token is not output
  EXPECT_EQ(stop.last().completion_tokens, 2);
  EXPECT_EQ(stop.text(), text_of(p, {400, 401}));

  Collector& go_on = collector();
  EngineRequest r = request(p, 5, go_on);
  r.ignore_eos = true;
  s.submit(std::move(r));
  ASSERT_TRUE(go_on.wait_finished());
  EXPECT_EQ(go_on.last().finish_reason, FinishReason::Length);
  EXPECT_EQ(go_on.tokens(), (std::vector<int32_t>{400, 401, eos, 402, 403}));
  s.shutdown(true);
  EXPECT_EQ(s.stats().finished_stop, 1u);
  EXPECT_EQ(s.stats().finished_length, 1u);
}

TEST_F(SchedulerTest, AStopStringFinishesWithStopAndIsCutFromTheText) {
  Scheduler& s = start(options());
  const Tokenizer& tok = *model().tokenizer;
  const std::vector<int32_t> p = {tok.bos_id()};
  const auto script = tok.encode("Once upon a time there was a cat.", false);
  ASSERT_GT(script.size(), 5u);
  fake.set_script([&](std::span<const int32_t> ctx) { return script.at(ctx.size() - 1); });
  Collector& c = collector();
  EngineRequest r = request(p, 30, c);
  r.stop = {"a time"};
  s.submit(std::move(r));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(c.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(c.text(), "Once upon ");
  EXPECT_LT(c.tokens().size(), script.size());
  EXPECT_EQ(c.last().completion_tokens, static_cast<int32_t>(c.tokens().size()));

  Collector& whole = collector();
  s.submit(request(p, static_cast<int32_t>(script.size()), whole));
  ASSERT_TRUE(whole.wait_finished());
  EXPECT_EQ(whole.last().finish_reason, FinishReason::Length);
  EXPECT_EQ(whole.text(), "Once upon a time there was a cat.");
  EXPECT_EQ(whole.tokens(), script);
}

TEST_F(SchedulerTest, StopTokenIdsFinishWithStopEvenWhenEosIsIgnored) {
  Scheduler& s = start(options());
  const int32_t eos = model().tokenizer->stop_ids().at(0);
  const auto p = prompt(300, 3);
  const std::vector<int32_t> script = {400, eos, 401, 402, 403, 404};
  fake.set_script([&](std::span<const int32_t> ctx) { return script.at(ctx.size() - p.size()); });
  Collector& c = collector();
  EngineRequest r = request(p, 5, c);
  r.ignore_eos = true;
  r.stop_token_ids = {402};
  s.submit(std::move(r));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(c.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(c.tokens(), (std::vector<int32_t>{400, eos, 401}));  // 402 is not output
  EXPECT_EQ(c.last().completion_tokens, 3);
  EXPECT_EQ(c.text(), text_of(p, {400, eos, 401}));

  EngineRequest outside = request(p, 5, collector());
  outside.stop_token_ids = {vocab()};
  EXPECT_THROW(s.submit(std::move(outside)), std::invalid_argument);
}

TEST_F(SchedulerTest, NoStopTokenCanEndASequenceBeforeMinTokens) {
  Scheduler& s = start(options());
  const int32_t eos = model().tokenizer->stop_ids().at(0);
  const auto p = prompt(300, 3);
  // The model wants to stop at once, every time.
  fake.set_script([&](std::span<const int32_t>) { return eos; });
  Collector& c = collector();
  EngineRequest r = request(p, 10, c);
  r.min_tokens = 3;
  s.submit(std::move(r));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(c.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(c.last().completion_tokens, 3);
  const auto t = c.tokens();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(std::count(t.begin(), t.end(), eos), 0);

  fake.set_script([&](std::span<const int32_t>) { return 402; });
  Collector& ids = collector();
  EngineRequest r2 = request(p, 10, ids);
  r2.stop_token_ids = {402};
  r2.min_tokens = 2;
  s.submit(std::move(r2));
  ASSERT_TRUE(ids.wait_finished());
  EXPECT_EQ(ids.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(ids.last().completion_tokens, 2);

  EngineRequest too_many = request(p, 4, collector());
  too_many.min_tokens = 5;
  EXPECT_THROW(s.submit(std::move(too_many)), std::invalid_argument);
}

TEST_F(SchedulerTest, StopStringsDoNotMatchBeforeMinTokens) {
  Scheduler& s = start(options());
  const Tokenizer& tok = *model().tokenizer;
  const std::vector<int32_t> p = {tok.bos_id()};
  const auto script = tok.encode("Once upon a time there was a cat.", false);
  fake.set_script([&](std::span<const int32_t> ctx) { return script.at(ctx.size() - 1); });
  Collector& c = collector();
  EngineRequest r = request(p, 30, c);
  r.stop = {"Once", "there"};
  r.min_tokens = 2;
  s.submit(std::move(r));
  ASSERT_TRUE(c.wait_finished());
  EXPECT_EQ(c.last().finish_reason, FinishReason::Stop);
  EXPECT_EQ(c.text(), "Once upon a time ");
}

TEST_F(SchedulerTest, SpecialTokensAreInTheTextOnlyWhenNotSkipped) {
  Scheduler& s = start(options());
  const int32_t eos = model().tokenizer->stop_ids().at(0);
  const std::string eos_text(model().tokenizer->token_text(eos));
  const auto p = prompt(300, 3);
  const std::vector<int32_t> script = {400, eos, 401};
  fake.set_script([&](std::span<const int32_t> ctx) { return script.at(ctx.size() - p.size()); });
  Collector& skipped = collector();
  Collector& kept = collector();
  for (Collector* c : {&skipped, &kept}) {
    EngineRequest r = request(p, 3, *c);
    r.ignore_eos = true;
    r.skip_special_tokens = c == &skipped;
    s.submit(std::move(r));
  }
  ASSERT_TRUE(all_finish());
  EXPECT_EQ(skipped.text().find(eos_text), std::string::npos) << skipped.text();
  EXPECT_NE(kept.text().find(eos_text), std::string::npos) << kept.text();
  EXPECT_EQ(kept.tokens(), skipped.tokens());
}

TEST_F(SchedulerTest, LogprobsComeWithEachToken) {
  Scheduler& s = start(options());
  Collector& c = collector();
  EngineRequest r = request(prompt(300, 3), 3, c);
  r.logprobs = 2;
  s.submit(std::move(r));
  ASSERT_TRUE(c.wait_finished());
  int n = 0;
  for (auto& o : c.outputs()) {
    ASSERT_EQ(o.logprobs.size(), o.tokens.size());
    for (size_t i = 0; i < o.tokens.size(); ++i, ++n) {
      EXPECT_EQ(o.logprobs[i].token, o.tokens[i]);
      ASSERT_EQ(o.logprobs[i].top.size(), 2u);
      EXPECT_EQ(o.logprobs[i].top[0].token, o.tokens[i]);  // the fake's argmax
      EXPECT_GT(o.logprobs[i].logprob, o.logprobs[i].top[1].logprob);
    }
  }
  EXPECT_EQ(n, 3);
}

// ---- stats ----

TEST_F(SchedulerTest, StatsCountStepsTokensAndFinishes) {
  SchedulerOptions o = options();
  o.max_batched_tokens = 4;
  o.max_num_seqs = 2;
  o.kv_cache_bytes = 40 * block_bytes();
  Scheduler& s = start(o);
  EXPECT_EQ(s.stats().kv_blocks_total, 40);
  fake.set_delay(std::chrono::microseconds(200));
  // A one-token prompt, and one whose last token is left alone after a chunk (regression: those
  // prompt tokens ran in decode steps and went uncounted).
  std::vector<EngineRequest> rs;
  rs.push_back(request(prompt(300, 1), 4, collector()));
  rs.push_back(request(prompt(350, 6), 4, collector()));
  rs.push_back(request(prompt(400, 9), 4, collector()));
  s.submit(std::move(rs));
  s.shutdown(true);
  const auto steps = fake.steps();
  uint64_t prefill = 0, decode = 0;
  for (auto& st : steps) (st.phase == "prefill" ? prefill : decode)++;
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.prefill_steps, prefill);
  EXPECT_EQ(st.decode_steps, decode);
  EXPECT_GT(st.prefill_seconds, 0);
  EXPECT_GT(st.decode_seconds, 0);
  EXPECT_EQ(st.prompt_tokens, 16u);
  EXPECT_EQ(st.generation_tokens, 12u);
  EXPECT_EQ(st.finished_length, 3u);
  EXPECT_EQ(st.finished_stop + st.finished_abort + st.preemptions, 0u);
  EXPECT_EQ(st.running + st.waiting + st.kv_blocks_used, 0);
  EXPECT_EQ(s.ttft().snapshot().count, 3u);
  EXPECT_EQ(s.e2e().snapshot().count, 3u);
  EXPECT_EQ(s.inter_token().snapshot().count, 9u);
  for (const Histogram* h : {&s.queue_time(), &s.prefill_time(), &s.decode_time()})
    EXPECT_EQ(h->snapshot().count, 3u);
  EXPECT_DOUBLE_EQ(s.prompt_length().snapshot().sum, 16);
  EXPECT_DOUBLE_EQ(s.generation_length().snapshot().sum, 12);
  // Each phase lies inside the request: queue + prefill + decode = E2E.
  EXPECT_LE(s.queue_time().snapshot().sum + s.prefill_time().snapshot().sum +
                s.decode_time().snapshot().sum,
            s.e2e().snapshot().sum + 1e-9);
  EXPECT_GE(s.decode_time().snapshot().sum, 0.5 * 9 * 200e-6);  // 3 decode steps of 200 us each
  for (auto& c : collectors) EXPECT_EQ(c.last().finish_reason, FinishReason::Length);
}

}  // namespace
}  // namespace sandwich::engine
