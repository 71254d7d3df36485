// --allowed-origins: CORS for browser clients, off by default.
#include <gtest/gtest.h>

#include "http_test_client.h"

namespace sandwich::test {
namespace {

const std::vector<std::pair<std::string, std::string>> kPreflight = {
    {"Origin", "http://app.example"},
    {"Access-Control-Request-Method", "POST"},
    {"Access-Control-Request-Headers", "authorization, content-type"}};

TEST(Cors, AllowedOriginsGetTheHeadersAndPreflightNeedsNoKey) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(stories_daemon_args() +
           " --api-key k --allowed-origins 'http://app.example, http://other.example'");
  ASSERT_NE(d.port(), 0);
  Client c(d.port());
  const HttpResult pre = c.request("OPTIONS", "/v1/chat/completions", {}, kPreflight);
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(pre.header("access-control-allow-origin"), "http://app.example");
  EXPECT_NE(pre.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(pre.header("access-control-allow-headers"), "authorization, content-type");
  const HttpResult models = c.request(
      "GET", "/v1/models", {}, {{"Origin", "http://other.example"}, {"Authorization", "Bearer k"}});
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.header("access-control-allow-origin"), "http://other.example");
  EXPECT_EQ(models.header("vary"), "Origin");
  // Errors carry it too, so that the page can read them.
  const HttpResult unauthorized =
      c.request("GET", "/v1/models", {}, {{"Origin", "http://app.example"}});
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.header("access-control-allow-origin"), "http://app.example");
  // Another origin: no CORS headers, and its preflight is not answered as one.
  const HttpResult evil = c.request(
      "GET", "/v1/models", {}, {{"Origin", "http://evil.example"}, {"Authorization", "Bearer k"}});
  EXPECT_EQ(evil.status, 200);
  EXPECT_EQ(evil.header("access-control-allow-origin"), "");
  const HttpResult evil_pre =
      c.request("OPTIONS", "/v1/chat/completions", {},
                {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_NE(evil_pre.status, 204);
  EXPECT_EQ(evil_pre.header("access-control-allow-origin"), "");
}

TEST(Cors, StarAllowsAnyOriginAndStreamsCarryTheHeader) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(stories_daemon_args() + " --allowed-origins '[\"*\"]'");
  ASSERT_NE(d.port(), 0);
  Client c(d.port());
  const HttpResult pre = c.request("OPTIONS", "/v1/completions", {}, kPreflight);
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "*");
  const HttpResult r =
      c.request("POST", "/v1/completions",
                json{{"prompt", "Once"}, {"max_tokens", 2}, {"stream", true}}.dump(),
                {{"Origin", "http://any.example"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("access-control-allow-origin"), "*");
  EXPECT_NE(r.body.find("[DONE]"), std::string::npos);
}

TEST(Cors, OffByDefault) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(stories_daemon_args());
  ASSERT_NE(d.port(), 0);
  Client c(d.port());
  const HttpResult pre = c.request("OPTIONS", "/v1/completions", {}, kPreflight);
  EXPECT_EQ(pre.status, 405);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "");
  const HttpResult r = c.request("GET", "/v1/models", {}, {{"Origin", "http://app.example"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("access-control-allow-origin"), "");
}

}  // namespace
}  // namespace sandwich::test
