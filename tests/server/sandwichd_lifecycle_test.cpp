// server::Sandwichd driven in-process, without the program: start-up with the search the program
// hands in, serving, and a drain on request_stop().
#include <gtest/gtest.h>

#include "http_test_client.h"
#include "server/sandwichd.h"
#include "stories_sandwichd.h"

namespace sandwich::test {
namespace {

TEST(SandwichdLifecycle, SearchesWithoutAPlanServesAndDrainsOnRequest) {
  SANDWICH_REQUIRE_DATA();
  int searches = 0;
  const auto one_core = [&](const engine::Model& model, engine::KVCacheDType, std::string* how) {
    ++searches;
    EXPECT_EQ(model.config.vocab_size, 512);
    *how = "chosen by the test";
    engine::Plan plan;
    plan.prefill = plan.decode = engine::single_rank_config(1);
    return plan;
  };
  server::Sandwichd daemon(stories_options(), one_core);
  daemon.start();
  EXPECT_EQ(searches, 1);
  ASSERT_NE(daemon.port(), 0);
  Client client(daemon.port());
  EXPECT_EQ(client.get("/health").status, 200);
  const json body = {
      {"model", "stories"}, {"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}};
  const HttpResult r = client.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 4);
  daemon.request_stop();
  EXPECT_EQ(daemon.serve(), 0);
}

TEST(SandwichdLifecycle, AThreadCountSkipsTheSearch) {
  SANDWICH_REQUIRE_DATA();
  server::SandwichdOptions o = stories_options();
  o.plan.threads = 1;
  o.plan.threads_given = true;
  bool searched = false;
  server::Sandwichd daemon(std::move(o),
                           [&](const engine::Model&, engine::KVCacheDType, std::string*) {
                             searched = true;
                             return engine::Plan{};
                           });
  daemon.start();
  EXPECT_FALSE(searched);
  daemon.request_stop();
  EXPECT_EQ(daemon.serve(), 0);
}

}  // namespace
}  // namespace sandwich::test
