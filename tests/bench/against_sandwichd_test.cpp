// sandwich-bench serve against the real sandwichd (stories260K): prompts built with the
// daemon's own /tokenize land on the trace's exact lengths, outputs on max_tokens.
#include <gtest/gtest.h>

#include <sstream>

#include "bench/serve.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

class BenchAgainstSandwichd : public StoriesDaemonSuite<BenchAgainstSandwichd> {
 public:
  static std::string daemon_args() { return "-t 1"; }

 protected:
  bench::ServeOptions options(const std::string& dataset, int n) const {
    bench::ServeOptions o;
    o.endpoints = {
        bench::parse_endpoint("sandwichd=http://127.0.0.1:" + std::to_string(daemon_->port()))};
    o.dataset = bench::parse_dataset_spec(dataset);
    o.dataset_path = (data_dir() / "traces" / "sharegpt_lengths.csv").string();
    o.num_prompts = n;
    o.max_concurrency = 2;
    o.slo = {10000, 1000};
    o.timeout_s = 60;
    return o;
  }
};

void expect_exact(const bench::ServeReport& r) {
  ASSERT_EQ(r.runs.size(), 1u);
  const auto& e = r.endpoints[0];
  EXPECT_EQ(e.model, "stories");
  EXPECT_EQ(e.tokenizer, "vllm");
  EXPECT_EQ(e.prompts_exact, e.prompts);
  const auto& s = r.runs[0].summary;
  EXPECT_EQ(s.failed, 0) << (s.errors.empty() ? "" : s.errors.begin()->first);
  EXPECT_EQ(s.prompt_len_mismatch, 0);  // the daemon's usage agrees with the trace
  EXPECT_EQ(s.output_len_mismatch, 0);  // ignore_eos honoured
  for (const auto& rec : r.runs[0].records) {
    EXPECT_EQ(rec.usage_prompt_tokens, rec.input_len);
    EXPECT_EQ(rec.usage_completion_tokens, rec.max_tokens);
  }
}

TEST_F(BenchAgainstSandwichd, CompletionsGetExactLengths) {
  std::ostringstream log;
  expect_exact(bench::run_serve(options("fixed:40,12", 4), log));
}

TEST_F(BenchAgainstSandwichd, ShareGptWithinTheDaemonsContext) {
  std::ostringstream log;
  auto o = options("sharegpt", 4);
  o.max_model_len = 160;  // keeps the run short
  const auto r = bench::run_serve(o, log);
  expect_exact(r);
}

TEST_F(BenchAgainstSandwichd, ChatCountsTheTemplate) {
  std::ostringstream log;
  auto o = options("fixed:48,8", 3);
  o.api = bench::Api::Chat;
  expect_exact(bench::run_serve(o, log));
}

}  // namespace
}  // namespace sandwich::test
