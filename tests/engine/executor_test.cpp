// Tensor-parallel rank processes: same outputs as one rank, plan switching, a rank dying.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dummy_llama.h"
#include "engine/plans/plan.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/generator.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

std::unique_ptr<Model> stories() {
  LoadOptions o;
  o.model = (test::data_dir() / "models/stories260K/stories260K.bin").string();
  o.tokenizer = test::data_dir() / "models/stories260K/tok512.bin";
  return load_model(o);
}

std::string expected_greedy() {
  std::ifstream in(test::data_dir() / "models/stories260K/expected_greedy_200.txt",
                   std::ios::binary);
  std::string s{std::istreambuf_iterator<char>(in), {}};
  return s.substr(0, s.size() - 1);  // the reference printed a final newline
}

std::string greedy(const Model& m, const std::string& prefill, const std::string& decode) {
  GeneratorOptions o;
  o.prefill = topotree::parse_service_config(prefill);
  o.decode = topotree::parse_service_config(decode);
  Generator g(m, o);
  GenerationRequest r;
  r.prompt = {m.config.bos_id};
  r.max_tokens = 200;
  r.sampling.temperature = 0;
  return g.generate(r).text;
}

TEST(Executor, TwoRanksOfOneThreadEqualOneRankOfTwo) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();
  EXPECT_EQ(greedy(*m, "1x2", "1x2"), expected_greedy());
  EXPECT_EQ(greedy(*m, "2x1", "2x1"), expected_greedy());
}

TEST(Executor, PrefillAndDecodeUnderDifferentConfigurations) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();
  EXPECT_EQ(greedy(*m, "1x2", "2x1"), expected_greedy());
  EXPECT_EQ(greedy(*m, "2x1", "1x1"), expected_greedy());
  // A prompt prefilled by two ranks and continued by one (the KV pages are shared).
  GeneratorOptions a, b;
  a.prefill = topotree::parse_service_config("2x1");
  a.decode = topotree::parse_service_config("1x2");
  b.prefill = b.decode = topotree::parse_service_config("1x1");
  GenerationRequest r;
  r.prompt = m->tokenizer->encode("Once upon a time, there was a big dog", true);
  r.max_tokens = 60;
  r.sampling.temperature = 0;
  EXPECT_EQ(Generator(*m, a).generate(r).text, Generator(*m, b).generate(r).text);
}

// Dummy weights with a head size of 64 and GQA: logits of 2 ranks against 1, within FP32
// reordering tolerance (the all-reduce changes the summation order of the residual).
TEST(Executor, DummyModelLogitsAgreeAcrossRankCounts) {
  TempDir dir;
  test::write_llama_config(dir.path(), {256, 2, 4, 2, 384, 1000, 256});
  for (auto dt : {WeightDType::F32, WeightDType::BF16}) {
    auto m = load_model(test::dummy_weights(dir.path(), dt));
    KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64) * 2);
    ExecutorLimits lim;
    lim.max_tokens = 64;
    lim.max_entries = 2;
    auto one = make_executor(*m, kv, topotree::parse_service_config("1x1"), lim);
    auto two = make_executor(*m, kv, topotree::parse_service_config("2x1"), lim);
    EXPECT_EQ(executor_rank_pids(*two).size(), 2u);
    std::vector<int32_t> ta, tb, prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back((i * 31 + 7) % 1000);
    ASSERT_TRUE(kv.reserve(ta, 48));
    ASSERT_TRUE(kv.reserve(tb, 48));
    std::vector<float> la(1000), lb(1000);
    BatchEntry ea{prompt, 0, ta, true}, eb{prompt, 0, tb, true};
    one->run({&ea, 1}, la.data());
    two->run({&eb, 1}, lb.data());
    double scale = 0;
    for (float v : la) scale = std::max(scale, static_cast<double>(std::abs(v)));
    // FP32: the residual is summed in another order; BF16: also rounded differently per shard.
    const double tol = (dt == WeightDType::F32 ? 1e-5 : 2e-2) * scale;
    for (int i = 0; i < 1000; ++i) ASSERT_NEAR(la[i], lb[i], tol) << i;
  }
}

bool process_gone(int pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

// A 2-rank executor over stories260K with room for one sequence, and greedy decoding on it.
struct TwoRanks {
  std::unique_ptr<Model> m = stories();
  KVCache kv{m->config, KVCache::bytes_for_tokens(m->config, 512)};
  std::unique_ptr<Executor> ex;
  std::vector<int32_t> blocks;
  std::vector<float> logits = std::vector<float>(m->config.vocab_size);

  explicit TwoRanks(double step_timeout_seconds = 300) {
    ExecutorLimits lim;
    lim.max_tokens = 512;
    lim.max_entries = 1;
    lim.step_timeout_seconds = step_timeout_seconds;
    ex = make_executor(*m, kv, topotree::parse_service_config("2x1"), lim);
    EXPECT_TRUE(kv.reserve(blocks, 512));
  }
  int32_t step(int32_t tok, int32_t pos) {
    BatchEntry e{std::span<const int32_t>(&tok, 1), pos, blocks, true};
    ex->run({&e, 1}, logits.data());
    return argmax(logits.data(), m->config.vocab_size);
  }
  std::vector<int32_t> greedy(int n) {
    std::vector<int32_t> out{1};
    for (int pos = 0; pos < n; ++pos) out.push_back(step(out.back(), pos));
    return out;
  }
  // Waits (a few seconds at most) until the group has been re-formed `restarts` times in all.
  ExecutorHealth wait_for_restarts(uint64_t restarts) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    ExecutorHealth h = ex->health();
    while ((h.restarts < restarts || h.restarting) && !h.failed &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      h = ex->health();
    }
    return h;
  }
};

TEST(Executor, KillingARankFailsTheStepQuicklyAndTheGroupIsReformed) {
  SANDWICH_REQUIRE_DATA();
  TwoRanks g;
  const std::vector<int32_t> before = g.greedy(40);
  const std::vector<int> pids = executor_rank_pids(*g.ex);
  ASSERT_EQ(pids.size(), 2u);
  std::atomic<bool> started{false};
  std::chrono::steady_clock::time_point killed_at;
  std::string error;
  std::thread gen([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    try {
      for (int32_t pos = 0, tok = 1; std::chrono::steady_clock::now() < give_up;
           pos = (pos + 1) % 500) {
        tok = g.step(tok, pos);
        started = true;
      }
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Stopped first, so that the kill lands in a step (a rank that dies between steps is replaced
  // before the next one, which then does not fail).
  ASSERT_EQ(kill(pids[1], SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  gen.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_NE(error.find("rank 1 (pid " + std::to_string(pids[1]) + ")"), std::string::npos) << error;
  EXPECT_NE(error.find("SIGKILL (signal 9)"), std::string::npos) << error;
  // Re-formed from fresh processes (the other rank was stopped too), and it computes as before.
  const ExecutorHealth h = g.wait_for_restarts(1);
  EXPECT_EQ(h.restarts, 1u);
  EXPECT_FALSE(h.restarting || h.failed) << h.message;
  EXPECT_GT(h.last_recovery_seconds, 0);
  EXPECT_LT(h.last_recovery_seconds, 2.0);
  EXPECT_TRUE(process_gone(pids[0]));
  EXPECT_TRUE(process_gone(pids[1]));
  const std::vector<int> now = executor_rank_pids(*g.ex);
  ASSERT_EQ(now.size(), 2u);
  EXPECT_NE(now[0], pids[0]);
  EXPECT_EQ(g.greedy(40), before);
}

TEST(Executor, ARankKilledBetweenStepsIsReplacedBeforeTheNextStep) {
  SANDWICH_REQUIRE_DATA();
  TwoRanks g;
  const std::vector<int32_t> before = g.greedy(20);
  const int pid = executor_rank_pids(*g.ex)[0];
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  while (!process_gone(pid) && test::proc_stat(pid).state != 'Z')
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  // No step was under way: none fails, the next one waits for the new group if need be.
  EXPECT_EQ(g.greedy(20), before);
  EXPECT_EQ(g.wait_for_restarts(1).restarts, 1u);
}

TEST(Executor, AHungRankIsCaughtByTheStepTimeoutAndReplaced) {
  SANDWICH_REQUIRE_DATA();
  TwoRanks g(2.0);  // seconds: long enough for a loaded machine, short for a test
  const std::vector<int32_t> before = g.greedy(20);
  const int stopped = executor_rank_pids(*g.ex)[1];
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  try {
    g.greedy(20);
    FAIL() << "a step with a stopped rank finished";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 (pid " + std::to_string(stopped) +
                        ") of the rank group 2x1 [0] [1] did not finish a step within 2 s"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(g.wait_for_restarts(1).restarts, 1u);
  EXPECT_TRUE(process_gone(stopped));
  EXPECT_EQ(g.greedy(20), before);
}

TEST(Executor, RepeatedFailuresStopTheGroupForGood) {
  SANDWICH_REQUIRE_DATA();
  TwoRanks g;
  for (uint64_t i = 1; i <= 6; ++i) {
    ASSERT_EQ(kill(executor_rank_pids(*g.ex)[0], SIGKILL), 0);
    if (i <= 5) {
      ASSERT_EQ(g.wait_for_restarts(i).restarts, i);
    }
  }
  const ExecutorHealth h = g.wait_for_restarts(6);
  EXPECT_TRUE(h.failed);
  EXPECT_NE(h.message.find("failed 6 times within 60 s"), std::string::npos) << h.message;
  try {
    g.step(1, 0);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is stopped"), std::string::npos) << e.what();
  }
}

TEST(Executor, LosingTheSpawnerStopsTheGroupForGood) {
  SANDWICH_REQUIRE_DATA();
  TwoRanks g;
  const std::vector<int> pids = executor_rank_pids(*g.ex);
  ASSERT_EQ(kill(executor_spawner_pid(*g.ex), SIGKILL), 0);
  const ExecutorHealth h = g.wait_for_restarts(1);
  EXPECT_TRUE(h.failed);
  EXPECT_NE(h.message.find("the rank spawner"), std::string::npos) << h.message;
  EXPECT_THROW(g.step(1, 0), std::runtime_error);
}

TEST(Executor, StoppingTheGroupLeavesNoProcessBehind) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  std::vector<int> pids;
  {
    auto ex = make_executor(*m, kv, topotree::parse_service_config("2x1"), ExecutorLimits{});
    pids = executor_rank_pids(*ex);
    pids.push_back(executor_spawner_pid(*ex));
  }
  for (int p : pids) EXPECT_TRUE(process_gone(p));
}

TEST(Plan, TakesEachPhasesConfigurationInAnyForm) {
  TempDir dir;
  std::ofstream(dir / "plan.json")
      << R"({"prefill":{"ranks":[{"cpus":[0,1]}]},"decode":{"config":{"ranks":[{"cpus":[0]},{"cpus":[1]}]}}})";
  const Plan p = load_plan(dir / "plan.json");
  EXPECT_EQ(p.prefill.rank_count(), 1);
  EXPECT_EQ(p.decode.rank_count(), 2);
  std::ofstream(dir / "short.json") << R"({"prefill":"1x2","decode":"2x1"})";
  const Plan q = load_plan(dir / "short.json");
  EXPECT_EQ(q.prefill.to_string(), "1x2 [0-1]");
  EXPECT_EQ(q.decode.to_string(), "2x1 [0] [1]");
  std::ofstream(dir / "bad.json") << R"({"prefill":{}})";
  EXPECT_THROW(load_plan(dir / "bad.json"), std::invalid_argument);
  std::ofstream(dir / "wrong.json") << R"({"prefill":"1x1","decode":{"ranks":[{"cpus":[999]}]}})";
  try {
    load_plan(dir / "wrong.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("wrong.json: decode: CPU 999 of rank 0 does not exist"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plan, ThreadCountsAreBounded) {
  EXPECT_EQ(single_rank_config(1).ranks[0].cpus, std::vector<int>{0});
  EXPECT_GE(single_rank_config(0).ranks[0].cpus.size(), 1u);
  EXPECT_THROW(single_rank_config(-3), std::invalid_argument);
  EXPECT_THROW(single_rank_config(max_threads() + 1), std::invalid_argument);
  try {
    resolve_threads(100000, "--threads");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--threads must be 0 (all cores) to"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got 100000"), std::string::npos) << e.what();
  }
}

TEST(Plan, PlanThatIsADirectoryNamesIt) {
  TempDir dir;
  try {
    load_plan(dir.path());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("plan " + dir.path().string() + ": a directory, not a file"),
        std::string::npos)
        << e.what();
  }
}

TEST(Executor, RankCountMustDivideTheKvHeads) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();  // 4 KV heads
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  // Three ranks (CPUs are not checked when a configuration is built by hand).
  topotree::ServiceConfig three;
  three.ranks = {topotree::Rank{0, {0}, {0}}, topotree::Rank{0, {0}, {1}},
                 topotree::Rank{0, {0}, {0}}};
  EXPECT_THROW(make_executor(*m, kv, three, ExecutorLimits{}), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::engine
