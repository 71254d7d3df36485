// Heavy requests must not stall sandwichd: bodies, chat templates and tokenizers run on the
// preprocessing workers (not the I/O threads that answer /health and carry the streams), behind
// a bounded queue, with limits checked before the tokenizer runs. A hostile chat template (guarded
// by messages|length > 1, so that the start-up check passes) answers 400 and the server stays up.
// sandwichd runs in-process, as in sandwichd_lifecycle_test.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http_test_client.h"
#include "server/sandwichd.h"
#include "stories_sandwichd.h"

namespace sandwich::test {
namespace {

using Clock = std::chrono::steady_clock;

// Burns the interpreter's whole step limit (9M > 5M steps) when a chat has two messages.
const char* kStepLimitLoop =
    "{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}";

// A template that renders `hostile` for chats of more than one message, and the plain contents
// otherwise (what the start-up check and the follow-up request send).
std::string guarded(const std::string& hostile) {
  return "{% if messages|length > 1 %}" + hostile +
         "{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}";
}

class Daemon {
 public:
  // `options` adjusts the defaults; `chat_template` is written to a file for --chat-template.
  Daemon(const std::string& chat_template,
         const std::function<void(server::SandwichdOptions&)>& options = {}) {
    server::SandwichdOptions o = stories_options();
    o.service.log_interval_seconds = 0;
    o.plan.threads = 1;
    o.plan.threads_given = true;
    if (!chat_template.empty()) {
      std::ofstream(tmp_ / "t.jinja") << chat_template;
      o.service.chat_template = (tmp_ / "t.jinja").string();
    }
    if (options) options(o);
    daemon_ = std::make_unique<server::Sandwichd>(std::move(o), server::StartupPlanSearch{});
    daemon_->start();
  }
  ~Daemon() {
    daemon_->request_stop();
    EXPECT_EQ(daemon_->serve(), 0);
  }
  uint16_t port() const { return daemon_->port(); }

 private:
  TempDir tmp_;
  std::unique_ptr<server::Sandwichd> daemon_;
};

json chat(int messages) {
  json m = json::array();
  for (int i = 0; i < messages; ++i)
    m.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "Once upon a time"}});
  return {{"model", "stories"}, {"messages", m}, {"max_tokens", 2}, {"temperature", 0}};
}

// The statuses of `n` requests sent at once, each on its own connection.
std::vector<int> concurrently(uint16_t port, int n, const std::string& target, const json& body) {
  std::vector<int> statuses(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      Client c(port);
      statuses[static_cast<size_t>(i)] = c.post(target, body).status;
    });
  for (auto& t : threads) t.join();
  return statuses;
}

class HostileTemplate : public testing::TestWithParam<std::pair<const char*, std::string>> {};

TEST_P(HostileTemplate, AnswersATemplateErrorAndTheServerStaysUp) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(guarded(GetParam().second));
  Client c(d.port());
  const HttpResult bad = c.post("/v1/chat/completions", chat(2));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("chat template error"), std::string::npos) << bad.body;
  EXPECT_EQ(Client(d.port()).get("/health").status, 200);
  const HttpResult ok = Client(d.port()).post("/v1/chat/completions", chat(1));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

std::string long_chain(int terms) {
  std::string s = "{{ 1";
  for (int i = 1; i < terms; ++i) s += " + 1";
  return s + " }}";
}

// Before the interpreter's own limits (issue 33), these crashed the process (SIGFPE) or
// allocated gigabytes.
INSTANTIATE_TEST_SUITE_P(
    Sandwichd, HostileTemplate,
    testing::Values(std::pair{"FloorDivOverflow", "{{ (-9223372036854775807 - 1) // -1 }}"},
                    std::pair{"MinusMinOverflow", "{{ -(-9223372036854775807 - 1) }}"},
                    std::pair{"HugeList", "{{ ('x' * 60000000)|list|length }}"},
                    std::pair{"StepLimitLoop", std::string(kStepLimitLoop)}),
    [](const auto& p) { return std::string(p.param.first); });

// Python's INT64_MIN % -1 is 0; it used to kill the process with SIGFPE.
TEST(SandwichdHostileTemplates, ModuloOfTheSmallestIntegerByMinusOneIsZero) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(guarded("{{ raise_exception('value ' ~ ((-9223372036854775807 - 1) % -1)) }}"));
  const HttpResult r = Client(d.port()).post("/v1/chat/completions", chat(2));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("chat template error: value 0"), std::string::npos) << r.body;
  EXPECT_EQ(Client(d.port()).post("/v1/chat/completions", chat(1)).status, 200);
}

// A chain taller than any real template is refused when the template is parsed, guarded or not;
// 20,000 terms used to overflow the stack at the first two-message request.
TEST(SandwichdHostileTemplates, ALeftAssociativeChainIsRefusedAtStartUp) {
  SANDWICH_REQUIRE_DATA();
  try {
    Daemon d(guarded(long_chain(20000)));
    ADD_FAILURE() << "sandwichd started with a 20,000-term chain";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper than"), std::string::npos) << e.what();
  }
}

TEST(SandwichdLimits, APromptOverMaxPromptBytesIs400BeforeTokenizing) {
  SANDWICH_REQUIRE_DATA();
  Daemon d("", [](server::SandwichdOptions& o) { o.service.max_prompt_bytes = 1000; });
  Client c(d.port());
  HttpResult r =
      c.post("/v1/completions",
             {{"model", "stories"}, {"prompt", std::string(1001, 'a')}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("--max-prompt-bytes"), std::string::npos) << r.body;
  // Chat: the contents together.
  json two = chat(2);
  two["messages"][0]["content"] = std::string(600, 'a');
  two["messages"][1]["content"] = std::string(600, 'b');
  r = c.post("/v1/chat/completions", two);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("--max-prompt-bytes"), std::string::npos) << r.body;
  r = c.post("/tokenize", {{"model", "stories"}, {"prompt", std::string(1001, 'a')}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(c.post("/v1/completions", {{"model", "stories"}, {"prompt", "Once"}, {"max_tokens", 1}})
                .status,
            200);
}

TEST(SandwichdLimits, AnEightMiBPromptIsTakenByDefaultAndRefusedForTheContextUntokenized) {
  SANDWICH_REQUIRE_DATA();
  Daemon d("");
  Client c(d.port());
  // stories260K's context is 512 tokens; tokenizing 8 MiB would take seconds, the bound does not.
  const auto start = Clock::now();
  const HttpResult r =
      c.post("/v1/completions",
             {{"model", "stories"}, {"prompt", std::string(8u << 20, 'a')}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("maximum context length is 512 tokens"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("at least"), std::string::npos) << r.body;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  // Chat: the rendered prompt.
  json big = chat(1);
  big["messages"][0]["content"] = std::string(1u << 20, 'a');
  const HttpResult rc = c.post("/v1/chat/completions", big);
  EXPECT_EQ(rc.status, 400) << rc.body.substr(0, 300);
  EXPECT_NE(rc.body.find("at least"), std::string::npos) << rc.body;
}

TEST(SandwichdLimits, AFullPreprocessingQueueIs429AtOnce) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(guarded(kStepLimitLoop), [](server::SandwichdOptions& o) {
    o.service.preprocess_threads = 1;
    o.service.preprocess_queue = 1;
  });
  // One renders, one waits, the rest are refused while the first burns its step limit.
  const std::vector<int> statuses = concurrently(d.port(), 4, "/v1/chat/completions", chat(2));
  int refused = 0;
  for (int s : statuses) {
    EXPECT_TRUE(s == 400 || s == 429) << s;
    refused += s == 429;
  }
  EXPECT_GE(refused, 1);
  EXPECT_EQ(Client(d.port()).post("/v1/chat/completions", chat(1)).status, 200);
}

TEST(SandwichdLimits, HealthAnswersWhileTemplatesRender) {
  SANDWICH_REQUIRE_DATA();
  auto d = std::make_unique<Daemon>(guarded(kStepLimitLoop));
  const uint16_t port = d->port();
  std::vector<int> statuses;
  std::thread heavy([&] { statuses = concurrently(port, 8, "/v1/chat/completions", chat(2)); });
  // On the I/O thread, the eight renders held /health for all of their time (over a second).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Client c(port);
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(c.get("/health").status, 200);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The drain lets the renders under way finish; the requests still queued get 503.
  d.reset();
  heavy.join();
  for (int s : statuses) EXPECT_TRUE(s == 400 || s == 503) << s;
}

// An answer goes out as two writes (head, body); with Nagle's algorithm on, the body waited for
// the client's delayed ACK of the head: 40 ms on Linux for every /health a prober sent.
TEST(SandwichdLatency, SmallAnswersAreNotHeldForTheClientsAck) {
  SANDWICH_REQUIRE_DATA();
  Daemon d("");
  Client c(d.port());
  std::vector<double> ms;
  for (int i = 0; i < 9; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(c.get("/health").status, 200);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 30.0) << "median /health on a kept-alive connection";
}

}  // namespace
}  // namespace sandwich::test
