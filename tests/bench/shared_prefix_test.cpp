// `sandwich-bench serve --shared-prefix-tokens N`: every prompt starts with the same N-token
// prefix (a system prompt), then its own salted prompt of the dataset's length; against a fake
// server and against sandwichd, whose prefix cache then finds the prefix.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <sstream>

#include "bench/serve.h"
#include "fake_openai_server.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::bench {
namespace {

using test::FakeOpenAiServer;

// The longest start all the strings share.
std::string common_start(const std::vector<std::string>& ss) {
  std::string p = ss.at(0);
  for (const auto& s : ss) {
    size_t i = 0;
    while (i < p.size() && i < s.size() && p[i] == s[i]) ++i;
    p.resize(i);
  }
  return p;
}

TEST(BenchSharedPrefix, EveryPromptStartsWithTheSamePrefixAndKeepsItsOwnLength) {
  FakeOpenAiServer server;
  server.set_script(test::timed(0, 0));
  ServeOptions o;
  o.endpoints = {parse_endpoint(server.url())};
  o.dataset = parse_dataset_spec("fixed:8,2");
  o.num_prompts = 6;
  o.slo = {1000, 1000};
  o.rates = {std::numeric_limits<double>::infinity(), 1000.0};
  o.shared_prefix_tokens = 20;
  std::ostringstream log;
  const ServeReport r = run_serve(o, log);
  ASSERT_EQ(server.requests().size(), 12u);
  std::vector<std::string> prompts;
  std::set<std::string> distinct;
  for (const auto& q : server.requests()) {
    prompts.push_back(q.body["prompt"]);
    distinct.insert(prompts.back());
    EXPECT_EQ(q.prompt_tokens, 28) << prompts.back();
  }
  EXPECT_EQ(distinct.size(), 12u) << "the prompts after the prefix are salted apart";
  // The shared part is the whole prefix: 20 tokens of the fake tokenizer, one a word.
  const std::string shared = common_start(prompts);
  EXPECT_GE(std::count(shared.begin(), shared.end(), ' '), 18) << shared;
  EXPECT_EQ(r.endpoints[0].prompts_exact, 6);
  for (const auto& run : r.runs) {
    EXPECT_EQ(run.summary.completed, 6);
    EXPECT_EQ(run.summary.prompt_len_mismatch, 0);
  }
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("--shared-prefix-tokens") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(BenchSharedPrefix, APrefixThatLeavesNoRoomIsRefused) {
  FakeOpenAiServer server(FakeOpenAiServer::Options().with_model("fake-model", 300));
  ServeOptions o;
  o.endpoints = {parse_endpoint(server.url())};
  o.dataset = parse_dataset_spec("fixed:8,2");
  o.num_prompts = 1;
  o.slo = {1000, 1000};
  o.shared_prefix_tokens = 295;
  std::ostringstream log;
  EXPECT_THROW(run_serve(o, log), std::invalid_argument);
}

TEST(BenchSharedPrefix, SandwichdFindsThePrefixInItsCache) {
  SANDWICH_REQUIRE_DATA();
  test::Daemon d(test::stories_daemon_args() + " -t 1");
  ServeOptions o;
  o.endpoints = {parse_endpoint("sandwichd=http://127.0.0.1:" + std::to_string(d.port()))};
  o.dataset = parse_dataset_spec("fixed:40,8");
  o.num_prompts = 4;
  o.max_concurrency = 1;
  o.slo = {10000, 1000};
  o.shared_prefix_tokens = 64;
  std::ostringstream log;
  const ServeReport r = run_serve(o, log);
  const auto& s = r.runs.at(0).summary;
  EXPECT_EQ(s.completed, 4);
  EXPECT_EQ(s.prompt_len_mismatch, 0);
  for (const auto& rec : r.runs[0].records) EXPECT_EQ(rec.usage_prompt_tokens, 104);
  // One request after another: the last three find the prefix's full blocks (48 tokens or more:
  // the prefix's last block may hold tokens of the prompt after it).
  const std::string page = test::Client(d.port()).get("/metrics").body;
  // The sample carries a model_name label.
  const std::string name = "\nsandwich:prefix_cache_hits_total{";
  const size_t at = page.find(name);
  ASSERT_NE(at, std::string::npos) << page;
  const size_t value = page.find("} ", at);
  ASSERT_NE(value, std::string::npos) << page;
  EXPECT_GE(std::stod(page.substr(value + 2)), 3 * 48) << page;
}

}  // namespace
}  // namespace sandwich::bench
