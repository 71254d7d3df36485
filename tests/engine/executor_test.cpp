// Tensor-parallel rank processes: same outputs as one rank, plan switching, a rank dying.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dummy_llama.h"
#include "engine/executor.h"
#include "engine/generator.h"
#include "engine/plan.h"
#include "test_data.h"

namespace sandwich {
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
  o.prefill = topo::parse_service_config(prefill);
  o.decode = topo::parse_service_config(decode);
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
  a.prefill = topo::parse_service_config("2x1");
  a.decode = topo::parse_service_config("1x2");
  b.prefill = b.decode = topo::parse_service_config("1x1");
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
    auto one = make_executor(*m, kv, topo::parse_service_config("1x1"), lim);
    auto two = make_executor(*m, kv, topo::parse_service_config("2x1"), lim);
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

TEST(Executor, KillingARankFailsTheStepQuicklyAndStopsTheGroup) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 512));
  ExecutorLimits lim;
  lim.max_tokens = 512;
  lim.max_entries = 1;
  auto ex = make_executor(*m, kv, topo::parse_service_config("2x1"), lim);
  const std::vector<int> pids = executor_rank_pids(*ex);
  ASSERT_EQ(pids.size(), 2u);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(kv.reserve(blocks, 512));
  std::vector<float> logits(m->config.vocab_size);
  std::atomic<bool> started{false};
  std::chrono::steady_clock::time_point killed_at;
  std::string error;
  std::thread gen([&] {
    try {
      for (int32_t pos = 0; pos < 512; ++pos) {
        const int32_t tok = pos == 0 ? 1 : argmax(logits.data(), m->config.vocab_size);
        BatchEntry e{std::span<const int32_t>(&tok, 1), pos % 500, blocks, true};
        ex->run({&e, 1}, logits.data());
        started = true;
        if (pos == 499) pos = 0;  // keep stepping until the failure
      }
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  gen.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
  EXPECT_NE(error.find("signal 9"), std::string::npos) << error;
  EXPECT_TRUE(process_gone(pids[0]));
  EXPECT_TRUE(process_gone(pids[1]));
  // The group stays stopped, with a clear reason.
  BatchEntry e{std::span<const int32_t>(blocks.data(), 1), 0, blocks, true};
  EXPECT_THROW(ex->run({&e, 1}, logits.data()), std::runtime_error);
}

TEST(Executor, StoppingTheGroupLeavesNoProcessBehind) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  std::vector<int> pids;
  {
    auto ex = make_executor(*m, kv, topo::parse_service_config("2x1"), ExecutorLimits{});
    pids = executor_rank_pids(*ex);
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
    EXPECT_NE(std::string(e.what()).find("wrong.json: CPU 999 of rank 0 does not exist"),
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
    EXPECT_NE(std::string(e.what()).find(dir.path().string() + " is a directory"),
              std::string::npos)
        << e.what();
  }
}

TEST(Executor, RankCountMustDivideTheKvHeads) {
  SANDWICH_REQUIRE_DATA();
  auto m = stories();  // 4 KV heads
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64));
  // Three ranks (CPUs are not checked when a configuration is built by hand).
  topo::ServiceConfig three;
  three.ranks = {topo::Rank{0, {0}, {0}}, topo::Rank{0, {0}, {1}}, topo::Rank{0, {0}, {0}}};
  EXPECT_THROW(make_executor(*m, kv, three, ExecutorLimits{}), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich
