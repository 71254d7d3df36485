// sandwichd's prefix caching end to end with stories260K: a request sharing a long prefix with
// an earlier one reports cached prompt tokens and returns the greedy text of a server with
// --no-prefix-caching, with one rank and with two ranks reading the shared KV pages; /metrics
// counts the hits.
#include <string>

#include <gtest/gtest.h>

#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

const std::string kShared =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day, she saw a big red ball under a tree. She ran to the ball and "
    "picked it up. Her friend Tom came to play with her. They threw the ball high in the sky and "
    "laughed. ";

json completion(const std::string& prompt) {
  return {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}};
}

// A sample's value on a /metrics page, whatever its labels (-1 when absent).
double metric(const std::string& page, const std::string& name) {
  for (size_t at = page.find("\n" + name); at != std::string::npos;
       at = page.find("\n" + name, at + 1)) {
    size_t v = at + 1 + name.size();
    if (v < page.size() && page[v] == '{') v = page.find("} ", v) + 1;
    if (v < page.size() && page[v] == ' ') return std::stod(page.substr(v + 1));
  }
  return -1;
}

struct Answer {
  std::string text;
  int cached_tokens = -1, prompt_tokens = 0;
};

Answer ask(Client& c, const std::string& prompt) {
  auto r = c.post("/v1/completions", completion(prompt));
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  const json j = r.j();
  return {j["choices"][0]["text"], j["usage"]["prompt_tokens_details"]["cached_tokens"],
          j["usage"]["prompt_tokens"]};
}

void expect_hits_equal_cold(const std::string& ranks, const std::string& enable_flag) {
  SANDWICH_REQUIRE_DATA();
  const std::string first = kShared + "Then it started to rain.";
  const std::string second = kShared + "Lily said, \"Let's go home.\"";
  Answer cold;
  {
    Daemon d(stories_daemon_args() + " " + ranks + " --no-prefix-caching");
    Client c(d.port());
    ask(c, first);
    cold = ask(c, second);
    EXPECT_EQ(cold.cached_tokens, 0);
    auto m = c.get("/metrics");
    EXPECT_EQ(metric(m.body, "sandwich:prefix_cache_hits_total"), 0) << m.body;
    EXPECT_EQ(metric(m.body, "sandwich:prefix_cache_queries_total"), 0) << m.body;
  }
  Daemon d(stories_daemon_args() + " " + ranks + " " + enable_flag);
  Client c(d.port());
  const Answer a = ask(c, first);
  EXPECT_EQ(a.cached_tokens, 0);
  const Answer warm = ask(c, second);
  ASSERT_GE(warm.prompt_tokens, 64);
  // The shared text's full blocks (the prompts part a few tokens before the text differs).
  EXPECT_GE(warm.cached_tokens, 48);
  EXPECT_EQ(warm.cached_tokens % 16, 0);
  EXPECT_LT(warm.cached_tokens, warm.prompt_tokens);
  EXPECT_EQ(warm.text, cold.text);
  auto m = c.get("/metrics");
  EXPECT_EQ(metric(m.body, "sandwich:prefix_cache_hits_total"), warm.cached_tokens) << m.body;
  EXPECT_EQ(metric(m.body, "sandwich:prefix_cache_queries_total"),
            a.prompt_tokens + warm.prompt_tokens)
      << m.body;
}

TEST(SandwichdPrefixCaching, AHitGivesTheGreedyTextOfAColdServer) {
  expect_hits_equal_cold("", "");
}

TEST(SandwichdPrefixCaching, TwoRanksAHitGivesTheGreedyTextOfAColdServer) {
  expect_hits_equal_cold("--prefill-config 2x1 --decode-config 2x1", "--enable-prefix-caching");
}

}  // namespace
}  // namespace sandwich::test
