// sandwichd end to end on loopback with the real stories260K model.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "covering_schedule_table.h"
#include "http_test_client.h"
#include "prometheus_parser.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

std::string model_args() {
  return stories_daemon_args();
}

// What sandwich-generate prints for a greedy prompt (without the final newline).
std::string generate_cli(const std::string& prompt, int n) {
  TempDir dir;
  const std::string cmd = (bin_dir() / "sandwich-generate").string() + " " +
                          model_args().substr(0, model_args().find(" --served")) +
                          " -q --temperature 0 -n " + std::to_string(n) + " --prompt '" + prompt +
                          "' > " + (dir / "o").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir / "o");
  std::string s{std::istreambuf_iterator<char>(in), {}};
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Sandwichd : public StoriesDaemonSuite<Sandwichd> {
 public:
  static std::string daemon_args() {
    return "--max-num-seqs 48 --max-body-bytes 65536 --max-waiting 1000";
  }

 protected:
  Client client() { return Client(daemon_->port()); }
};

json completion(const std::string& prompt, int n, bool stream = false) {
  return {{"model", "stories"},
          {"prompt", prompt},
          {"max_tokens", n},
          {"temperature", 0},
          {"stream", stream}};
}

TEST_F(Sandwichd, GreedyCompletionEqualsSandwichGenerate) {
  const std::string prompt = "Once upon a time, there was a big dog";
  auto r = client().post("/v1/completions", completion(prompt, 60));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.j();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories");
  EXPECT_TRUE(j["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  EXPECT_TRUE(j["created"].is_number_integer());
  EXPECT_EQ(j["choices"][0]["text"], generate_cli(prompt, 60));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["usage"]["completion_tokens"], 60);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 12);  // BOS + 11
  EXPECT_EQ(j["usage"]["total_tokens"], 72);
}

// sandwichd with --schedules: a table whose valid, non-default schedules cover every GEMM of
// the model serves the same greedy text as sandwich-generate without one.
class SandwichdTuned : public StoriesDaemonSuite<SandwichdTuned> {
 public:
  static std::string daemon_args() {
    static TempDir dir;
    const std::string generate = (bin_dir() / "sandwich-generate").string() + " " +
                                 model_args().substr(0, model_args().find(" --served")) +
                                 " -q -n 4 --temperature 0 -t 2 --prompt 'Once upon a time'";
    EXPECT_GT(write_covering_schedule_table(generate, dir / "t.json"), 0);
    // Two threads in both phases, as the table's keys: the latency simulator's choice follows
    // this machine's cached calibration, which a loaded machine can tilt to one thread.
    return "--schedules " + (dir / "t.json").string() + " --threads 2";
  }
};

TEST_F(SandwichdTuned, GreedyCompletionEqualsSandwichGenerateWithoutTheTable) {
  const std::string prompt = "Once upon a time, there was a big dog";
  auto r = Client(daemon_->port()).post("/v1/completions", completion(prompt, 60));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["choices"][0]["text"], generate_cli(prompt, 60));
  EXPECT_EQ(daemon_->log().find("sandwich: schedules:"), std::string::npos) << daemon_->log();
}

TEST_F(Sandwichd, StreamedChunksConcatenateToTheSameText) {
  const std::string prompt = "Lily went to the park";
  json body = completion(prompt, 50, true);
  body["stream_options"] = {{"include_usage", true}};
  int status = 0;
  auto events = client().stream("/v1/completions", body, &status);
  ASSERT_EQ(status, 200);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text, finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "text_completion");
    if (c.contains("usage") && !c["usage"].is_null()) usage = c["usage"];
    if (c["choices"].empty()) continue;
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, generate_cli(prompt, 50));
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 50);
}

TEST_F(Sandwichd, ChatCompletionAppliesTheTemplate) {
  json body = {{"model", "stories"},
               {"messages",
                {{{"role", "system"}, {"content", "Tell a story."}},
                 {{"role", "user"}, {"content", "A dog."}}}},
               {"max_tokens", 20},
               {"temperature", 0}};
  auto c = client();
  auto r = c.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.j();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
  // The prompt is the rendered template: /tokenize with the same messages counts the same tokens,
  // and that is more than the bare contents.
  auto t = c.post("/tokenize", {{"model", "stories"}, {"messages", body["messages"]}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(j["usage"]["prompt_tokens"], t.j()["count"]);
  auto bare = c.post("/tokenize", {{"model", "stories"}, {"prompt", "Tell a story. A dog."}});
  EXPECT_GT(t.j()["count"].get<int>(), bare.j()["count"].get<int>() + 4);
  // Streaming chat: the role alone first (as OpenAI's and vLLM's), then content deltas without
  // it, finish reason last.
  body["stream"] = true;
  auto events = client().stream("/v1/chat/completions", body);
  ASSERT_GE(events.size(), 4u);
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  std::string text;
  for (size_t i = 1; i + 1 < events.size(); ++i) {
    json ch = json::parse(events[i]);
    EXPECT_FALSE(ch["choices"][0]["delta"].contains("role")) << events[i];
    if (ch["choices"][0]["delta"].contains("content"))
      text += ch["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text, j["choices"][0]["message"]["content"]);
}

TEST_F(Sandwichd, StreamingChatOpensEveryChoiceWithItsRoleAlone) {
  json body = {{"messages", {{{"role", "user"}, {"content", "A dog."}}}},
               {"max_tokens", 4},
               {"n", 3},
               {"stream", true}};
  auto events = client().stream("/v1/chat/completions", body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  std::map<int, int> chunks, roles;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json ch = json::parse(events[i]);
    const int idx = ch["choices"][0]["index"];
    const json& delta = ch["choices"][0]["delta"];
    if (chunks[idx]++ == 0) {
      EXPECT_EQ(delta, json({{"role", "assistant"}, {"content", ""}})) << events[i];
    } else {
      EXPECT_FALSE(delta.contains("role")) << events[i];
    }
    roles[idx] += delta.contains("role");
  }
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));
  // Completions are unchanged: text from the first chunk on.
  events = client().stream("/v1/completions",
                           {{"prompt", "The cat"}, {"max_tokens", 3}, {"stream", true}});
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(json::parse(events[0])["choices"][0].contains("text")) << events[0];
  EXPECT_FALSE(json::parse(events[0])["choices"][0].contains("delta")) << events[0];
}

TEST_F(Sandwichd, ConcurrentStreamingClientsGetIndependentCorrectOutput) {
  // Each client streams a different prompt; all of them run in one busy batch. Greedy outputs
  // must equal what each prompt gives alone.
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Tom and Sue",
                                            "One day, a little bird"};
  std::map<std::string, std::string> alone;
  for (auto& p : prompts)
    alone[p] = client().post("/v1/completions", completion(p, 40)).j()["choices"][0]["text"];
  constexpr int kClients = 32;
  std::vector<std::string> got(kClients);
  std::vector<int> statuses(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] {
      Client c(daemon_->port());
      auto events = c.stream("/v1/completions", completion(prompts[i % prompts.size()], 40, true),
                             &statuses[i]);
      for (auto& e : events) {
        if (e == "[DONE]") break;
        got[i] += json::parse(e)["choices"][0]["text"].get<std::string>();
      }
      if (events.empty() || events.back() != "[DONE]") got[i] += "<incomplete>";
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(statuses[i], 200);
    EXPECT_EQ(got[i], alone[prompts[i % prompts.size()]]) << "client " << i;
  }
}

// The value of `name`, which may name labels ('x_total{reason="y"}'); -1 when there is none.
// Every scrape must parse as a valid page.
double metric(Client& c, const std::string& name) {
  const PromPage page = parse_prometheus(c.get("/metrics").body);
  std::map<std::string, std::string> with;
  const size_t brace = name.find('{');
  static const std::regex label_re(R"re((\w+)="([^"]*)")re");
  if (brace != std::string::npos)
    for (std::sregex_iterator it(name.begin() + brace, name.end(), label_re), end; it != end; ++it)
      with[(*it)[1]] = (*it)[2];
  try {
    return page.value(name.substr(0, brace), with);
  } catch (const std::runtime_error&) {
    return -1;
  }
}

TEST_F(Sandwichd, DisconnectedClientFreesItsKVAndServingGoesOn) {
  {
    Client c(daemon_->port());
    auto events =
        c.stream("/v1/completions", completion("Once upon a time", 400, true), nullptr, 3);
    ASSERT_EQ(events.size(), 3u);
  }  // the client is gone mid-stream
  Client m(daemon_->port());
  double used = -1;
  for (int i = 0; i < 200; ++i) {
    used = metric(m, "sandwich:kv_cache_blocks_used");
    if (used == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(used, 0);
  EXPECT_GE(metric(m, "sandwich:request_success_total{finished_reason=\"abort\"}"), 1);
  auto r = m.post("/v1/completions", completion("The cat", 5));
  EXPECT_EQ(r.status, 200);
}

void expect_error(const HttpResult& r, int status, const std::string& fragment = {}) {
  EXPECT_EQ(r.status, status) << r.body;
  json j;
  ASSERT_NO_THROW(j = json::parse(r.body)) << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  for (const char* k : {"message", "type", "param", "code"})
    EXPECT_TRUE(j["error"].contains(k)) << r.body;
  // As OpenAI's: null or a string such as "model_not_found", never the HTTP status.
  EXPECT_TRUE(j["error"]["code"].is_null() || j["error"]["code"].is_string()) << r.body;
  if (!fragment.empty()) {
    EXPECT_NE(j["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r.body;
  }
}

TEST_F(Sandwichd, BadRequestsGetOpenAIErrorsAndTheNextRequestWorks) {
  auto c = client();
  expect_error(c.request("POST", "/v1/completions", "{not json"), 400, "not valid JSON");
  expect_error(c.post("/v1/completions", {{"prompt", 5}}), 400, "prompt");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", "ten"}}), 400,
               "max_tokens");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", -5}}), 400,
               "max_tokens");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 100000000}}), 400,
               "max_tokens");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"temperature", -1}}), 400,
               "temperature");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"top_p", 2}}), 400, "top_p");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"n", 0}}), 400, "'n'");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"stop", 7}}), 400, "stop");
  expect_error(c.post("/v1/completions", {{"prompt", "hi"}, {"stream", "yes"}}), 400, "stream");
  expect_error(c.post("/v1/completions", {{"prompt", {1, 2, 99999}}}), 400, "vocabulary");
  expect_error(
      c.post("/v1/completions", {{"prompt", "hi"}, {"stream_options", {{"include_usage", true}}}}),
      400, "stream_options");
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "dog ";
  const HttpResult too_long =
      c.post("/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 10}});
  expect_error(too_long, 400, "maximum context length");
  // As OpenAI's, so that clients can tell it from other 400s.
  const json too_long_error = json::parse(too_long.body)["error"];
  EXPECT_EQ(too_long_error["code"], "context_length_exceeded") << too_long.body;
  EXPECT_EQ(too_long_error["param"], "prompt") << too_long.body;
  json long_chat = {{"messages", {{{"role", "user"}, {"content", long_prompt}}}}};
  long_chat["max_tokens"] = 10;
  const HttpResult chat_too_long = c.post("/v1/chat/completions", long_chat);
  expect_error(chat_too_long, 400, "maximum context length");
  EXPECT_EQ(json::parse(chat_too_long.body)["error"]["code"], "context_length_exceeded")
      << chat_too_long.body;
  EXPECT_EQ(json::parse(chat_too_long.body)["error"]["param"], "messages") << chat_too_long.body;
  expect_error(c.post("/v1/chat/completions", {{"messages", json::array()}}), 400, "messages");
  expect_error(
      c.post("/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}), 400,
      "role");
  expect_error(c.post("/v1/completions", {{"model", "gpt-4"}, {"prompt", "hi"}}), 404, "gpt-4");
  expect_error(c.get("/v1/nothing-here"), 404);
  expect_error(c.get("/v1/completions"), 405);
  auto ok = c.post("/v1/completions", completion("The cat", 3));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(Sandwichd, OversizedBodyGets413) {
  Client c(daemon_->port());
  expect_error(c.post("/v1/completions", {{"prompt", std::string(70000, 'a')}}), 413);
  EXPECT_EQ(client().post("/v1/completions", completion("The cat", 3)).status, 200);
}

TEST_F(Sandwichd, ModelsHealthMetricsTokenize) {
  auto c = client();
  auto models = c.get("/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.j()["data"][0]["id"], "stories");
  EXPECT_EQ(models.j()["data"][0]["max_model_len"], 512);
  // GET /v1/models/{id}: the list's entry, as OpenAI's models.retrieve.
  auto one = c.get("/v1/models/stories");
  ASSERT_EQ(one.status, 200) << one.body;
  for (const char* k : {"id", "object", "owned_by", "root", "max_model_len"})
    EXPECT_EQ(one.j()[k], models.j()["data"][0][k]) << k;
  EXPECT_TRUE(one.j()["created"].is_number_integer()) << one.body;
  EXPECT_EQ(c.get("/v1/models/st%6Fries").status, 200);
  auto other = c.get("/v1/models/gpt-4");
  expect_error(other, 404, "The model `gpt-4` does not exist");
  EXPECT_EQ(other.j()["error"]["code"], "model_not_found") << other.body;
  expect_error(c.get("/v1/models/stories/x"), 404, "`stories/x`");
  expect_error(c.get("/v1/models/"), 404, "model");
  expect_error(c.get("/v1/models/st%zzries"), 400, "hex digits");
  expect_error(c.get("/v1/models/%ff%00"), 404);  // echoed, not valid UTF-8
  auto post_one = c.post("/v1/models/stories", json::object());
  expect_error(post_one, 405);
  EXPECT_EQ(post_one.header("allow"), "GET");
  EXPECT_EQ(c.get("/health").status, 200);
  auto m = c.get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.content_type.find("text/plain"), std::string::npos);
  for (const char* name :
       {"sandwich:time_to_first_token_seconds_bucket", "sandwich:inter_token_latency_seconds_count",
        "sandwich:e2e_request_latency_seconds_sum", "sandwich:num_requests_waiting",
        "sandwich:kv_cache_usage_perc", "sandwich:prefill_steps_total",
        "sandwich:decode_step_seconds_total", "sandwich:prompt_tokens_total",
        "sandwich:generation_tokens_total"})
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
  auto t = c.post("/tokenize", {{"prompt", "Once upon a time"}});
  ASSERT_EQ(t.status, 200);
  auto d = c.post("/detokenize", {{"tokens", t.j()["tokens"]}});
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.j()["prompt"], "Once upon a time");
}

TEST_F(Sandwichd, SamplingFieldsLogprobsStopAndN) {
  auto c = client();
  json body = completion("Once upon a time", 30);
  body["stop"] = {"."};
  auto r = c.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.j()["choices"][0]["text"];
  EXPECT_EQ(text.find('.'), std::string::npos);
  EXPECT_EQ(r.j()["choices"][0]["finish_reason"], "stop");
  body = completion("Once upon a time", 5);
  body["logprobs"] = 3;
  r = c.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json lp = r.j()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  ASSERT_EQ(lp["top_logprobs"][0].size(), 3u);
  EXPECT_LE(lp["token_logprobs"][0].get<double>(), 0.0);
  body = {{"prompt", {"The cat", "The dog"}},
          {"n", 2},
          {"max_tokens", 8},
          {"temperature", 0.8},
          {"seed", 7}};
  r = c.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["choices"].size(), 4u);
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 32);
  auto again = c.post("/v1/completions", body);
  EXPECT_EQ(again.j()["choices"], r.j()["choices"]);  // seeded
}

TEST_F(Sandwichd, LogitBiasBansAndForcesTokens) {
  auto c = client();
  const std::string prompt = "Once upon a time";
  json body = completion(prompt, 6);
  auto r = c.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  // Banning the greedy first token (its id from sandwich-generate) changes the text.
  TempDir dir;
  const std::string cmd = (bin_dir() / "sandwich-generate").string() + " " +
                          model_args().substr(0, model_args().find(" --served")) +
                          " -q --temperature 0 -n 1 --output-ids --prompt '" + prompt + "' > " +
                          (dir / "o").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  int first = -1;
  std::ifstream(dir / "o") >> first;
  ASSERT_GE(first, 0);
  body["logit_bias"] = {{std::to_string(first), -100}};
  auto b = c.post("/v1/completions", body);
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_NE(b.j()["choices"][0]["text"], r.j()["choices"][0]["text"]);
  // A +100 bias makes one token win every greedy step: the text is one piece six times.
  body["logit_bias"] = {{"300", 100}};
  auto f = c.post("/v1/completions", body);
  ASSERT_EQ(f.status, 200) << f.body;
  const std::string text = f.j()["choices"][0]["text"];
  ASSERT_EQ(text.size() % 6, 0u) << text;
  std::string six;
  for (int i = 0; i < 6; ++i) six += text.substr(0, text.size() / 6);
  EXPECT_EQ(text, six);
  for (json bad : {json{{"x", 1}}, json{{"-1", 1}}, json{{"999999", 1}}, json{{"5", 101}},
                   json{{"5", "a"}}, json::array({1})}) {
    body["logit_bias"] = bad;
    expect_error(c.post("/v1/completions", body), 400, "logit_bias");
  }
}

TEST_F(Sandwichd, UnsupportedFeaturesAreRefusedNotIgnored) {
  auto c = client();
  for (auto [k, v] : std::vector<std::pair<std::string, json>>{
           {"echo", true}, {"best_of", 3}, {"suffix", "end"}}) {
    json body = completion("hi", 2);
    body[k] = v;
    expect_error(c.post("/v1/completions", body), 400, k);
  }
  json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  // stories260K shows no tool-call format (neither its template nor its vocabulary): tools with
  // tool_choice auto cannot be parsed, and say so; none is fine.
  chat["tools"] = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  expect_error(c.post("/v1/chat/completions", chat), 400, "tool_choice");
  chat["tool_choice"] = "none";
  EXPECT_EQ(c.post("/v1/chat/completions", chat).status, 200);
  chat.erase("tools");
  chat.erase("tool_choice");
  // The legacy names are refused, pointing to the new ones.
  for (auto [k, v] : std::vector<std::pair<std::string, json>>{{"functions", {{{"name", "f"}}}},
                                                               {"function_call", "auto"}}) {
    json body = chat;
    body[k] = v;
    expect_error(c.post("/v1/chat/completions", body), 400, k);
  }
  // Structured output is served (structured_output_serving_test.cpp); a type that does not exist
  // is refused.
  chat["response_format"] = {{"type", "json_object"}};
  auto r = c.post("/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.j()["choices"][0]["message"]["content"].get<std::string>()).is_object())
      << r.body;
  chat["response_format"] = {{"type", "yaml"}};
  expect_error(c.post("/v1/chat/completions", chat), 400, "response_format");
  chat["response_format"] = {{"type", "text"}};
  EXPECT_EQ(c.post("/v1/chat/completions", chat).status, 200);
  json ok = completion("hi", 2);
  ok["echo"] = false;
  ok["best_of"] = 1;
  EXPECT_EQ(c.post("/v1/completions", ok).status, 200);
}

// vLLM's extras, made visible with logit_bias: a +100 bias forces a token.
TEST_F(Sandwichd, MinTokensStopTokenIdsSkipSpecialTokensAndMaxCompletionTokens) {
  auto c = client();
  const int eos = 2;  // </s> of the stories vocabulary
  json forced_eos = completion("Once upon a time", 6);
  forced_eos["logit_bias"] = {{std::to_string(eos), 100}};
  auto r = c.post("/v1/completions", forced_eos);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 0);
  EXPECT_EQ(r.j()["choices"][0]["finish_reason"], "stop");

  // min_tokens: EOS cannot come before 4 tokens.
  json at_least = forced_eos;
  at_least["min_tokens"] = 4;
  r = c.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                      {"max_tokens", 6},
                                      {"min_tokens", 4},
                                      {"logit_bias", forced_eos["logit_bias"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 4);
  EXPECT_EQ(r.j()["choices"][0]["finish_reason"], "stop");
  r = c.post("/v1/completions", at_least);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 4);

  // stop_token_ids: a forced token that is one ends the completion at once, out of the text.
  const int tok =
      c.post("/tokenize", {{"prompt", " cat"}, {"add_special_tokens", false}}).j()["tokens"].back();
  json forced = completion("Once upon a time", 5);
  forced["logit_bias"] = {{std::to_string(tok), 100}};
  r = c.post("/v1/completions", forced);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(r.j()["choices"][0]["text"].get<std::string>().empty());
  forced["stop_token_ids"] = {tok};
  r = c.post("/v1/completions", forced);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.j()["choices"][0]["text"], "");

  // skip_special_tokens: a generated </s> (ignore_eos) shows only when false.
  json eos_text = forced_eos;
  eos_text["ignore_eos"] = true;
  eos_text["max_tokens"] = 2;
  r = c.post("/v1/completions", eos_text);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["choices"][0]["text"], "");
  eos_text["skip_special_tokens"] = false;
  r = c.post("/v1/completions", eos_text);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string kept = r.j()["choices"][0]["text"];
  EXPECT_NE(kept.find("</s>"), std::string::npos) << kept;

  // max_completion_tokens on /v1/completions (it used to fall back to 16).
  json longer = completion("Once upon a time", 16);
  longer.erase("max_tokens");
  longer["max_completion_tokens"] = 30;
  longer["ignore_eos"] = true;
  r = c.post("/v1/completions", longer);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["completion_tokens"], 30);

  json typed = completion("hi", 2);
  typed["user"] = 1;
  expect_error(c.post("/v1/completions", typed), 400, "user");
  expect_error(c.post("/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"user", 1}}),
               400, "user");
}

// A 400 KB body of 200,000 nested '[' once crashed the server through a recursive copy.
TEST(SandwichdHardening, DeeplyNestedBodiesAre400AndTheServerGoesOn) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args());
  Client c(d.port());
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string chat = R"({"messages":[{"role":"user","content":)" + deep + "}]}";
  for (const char* path : {"/v1/chat/completions", "/tokenize"}) {
    auto r = c.request("POST", path, chat);
    expect_error(r, 400, "levels deep");
  }
  expect_error(c.request("POST", "/v1/completions", R"({"prompt":)" + deep + "}"), 400,
               "levels deep");
  expect_error(c.request("POST", "/detokenize", R"({"tokens":)" + deep + "}"), 400, "levels deep");
  EXPECT_EQ(c.post("/v1/completions", completion("hi", 2)).status, 200);
  EXPECT_EQ(d.terminate(), 0) << d.log();
}

TEST(SandwichdAuth, ApiKeyIsRequiredOnV1Routes) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --api-key secret");
  Client c(d.port());
  expect_error(c.post("/v1/completions", completion("hi", 2)), 401);
  expect_error(c.post("/v1/completions", completion("hi", 2), {{"Authorization", "Bearer wrong"}}),
               401);
  EXPECT_EQ(
      c.post("/v1/completions", completion("hi", 2), {{"Authorization", "Bearer secret"}}).status,
      200);
  // The scheme is case-insensitive (RFC 9110).
  EXPECT_EQ(
      c.post("/v1/completions", completion("hi", 2), {{"Authorization", "bearer secret"}}).status,
      200);
  EXPECT_EQ(
      c.post("/v1/completions", completion("hi", 2), {{"Authorization", "BEARER secret"}}).status,
      200);
  expect_error(c.post("/v1/completions", completion("hi", 2), {{"Authorization", "Basic secret"}}),
               401);
  {
    // With 'Expect: 100-continue' a wrong key is refused on the header: the body is never asked
    // for.
    Client e(d.port());
    e.send_raw(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n");
    ASSERT_TRUE(e.readable_within(5000));
    expect_error(e.read_response(), 401);
  }
  EXPECT_EQ(c.get("/health").status, 200);   // health stays open, as in vLLM
  EXPECT_EQ(c.get("/metrics").status, 200);  // and metrics, without --metrics-need-key
  // Every other route needs the key, and without it nothing tells which routes exist.
  expect_error(c.post("/tokenize", {{"prompt", "hi"}}), 401);
  expect_error(c.post("/detokenize", {{"tokens", {1}}}), 401);
  expect_error(c.get("/version"), 401);
  expect_error(c.get("/v1/models"), 401);
  expect_error(c.get("/v1/models/stories"), 401);
  expect_error(c.get("/no/such/route"), 401);
  expect_error(c.get("/v1/completions"), 401);
  const std::vector<std::pair<std::string, std::string>> key = {{"Authorization", "Bearer secret"}};
  expect_error(c.request("GET", "/no/such/route", {}, key), 404);
  expect_error(c.request("GET", "/v1/completions", {}, key), 405);
  EXPECT_EQ(c.request("GET", "/v1/models/stories", {}, key).status, 200);
  EXPECT_EQ(c.post("/tokenize", {{"prompt", "hi"}}, key).status, 200);
  // Two Authorization headers: which one would count is ambiguous.
  {
    Client two(d.port());
    const std::string body = completion("hi", 2).dump();
    two.send_raw(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n"
        "Authorization: Bearer other\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    expect_error(two.read_response(), 400, "Authorization");
  }
  EXPECT_EQ(d.terminate(), 0);
}

TEST(SandwichdAuth, MetricsNeedTheKeyWithMetricsNeedKey) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --api-key secret --metrics-need-key");
  Client c(d.port());
  expect_error(c.get("/metrics"), 401);
  EXPECT_EQ(c.request("GET", "/metrics", {}, {{"Authorization", "Bearer secret"}}).status, 200);
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(d.terminate(), 0);
}

TEST(SandwichdShutdown, SigtermFinishesRunningRequestsAndExitsZero) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args());
  std::atomic<int> status{0};
  std::string text;
  std::thread t([&] {
    Client c(d.port());
    auto r = c.post("/v1/completions", completion("Once upon a time", 300));
    status = r.status;
    if (r.status == 200) text = r.j()["choices"][0]["text"];
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(d.terminate(), 0) << d.log();
  t.join();
  EXPECT_EQ(status.load(), 200);
  EXPECT_FALSE(text.empty());
}

TEST(SandwichdStartup, BadModelExitsWithOneLine) {
  TempDir dir;
  const std::string cmd = (bin_dir() / "sandwichd").string() +
                          " --port 0 --model /nonexistent.gguf 2>" + (dir / "e").string();
  const int st = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 1);
  std::ifstream in(dir / "e");
  std::string err{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(err.find("sandwichd: error:"), std::string::npos) << err;
  // Nothing said it was listening: it never served.
  EXPECT_EQ(err.find("listening on"), std::string::npos) << err;
}

// Runs a shell command and returns its stdout (exit status in *rc).
std::string run_capture(const std::string& cmd, int* rc) {
  TempDir dir;
  *rc = std::system((cmd + " > " + (dir / "o").string() + " 2>&1").c_str());
  std::ifstream in(dir / "o");
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST_F(Sandwichd, CurlGetsTheGreedyTextStreamedAndNot) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "curl is not installed (scripts/setup.sh installs it)";
  const std::string prompt = "Once upon a time, there was a cat";
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon_->port()) + "/v1/completions";
  const std::string body = completion(prompt, 40).dump();
  int rc = 0;
  const std::string out = run_capture(
      "curl -sS " + url + " -H 'Content-Type: application/json' -d '" + body + "'", &rc);
  ASSERT_EQ(rc, 0) << out;
  const json j = json::parse(out);
  EXPECT_EQ(j["choices"][0]["text"], generate_cli(prompt, 40));
  const std::string sse =
      run_capture("curl -sSN " + url + " -H 'Content-Type: application/json' -d '" +
                      completion(prompt, 40, true).dump() + "'",
                  &rc);
  ASSERT_EQ(rc, 0) << sse;
  std::string text;
  size_t pos = 0;
  while ((pos = sse.find("data: {", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    text +=
        json::parse(sse.substr(pos + 6, end - pos - 6))["choices"][0]["text"].get<std::string>();
    pos = end;
  }
  EXPECT_EQ(text, j["choices"][0]["text"].get<std::string>());
  EXPECT_NE(sse.find("data: [DONE]\n\n"), std::string::npos);
}

// The official OpenAI Node SDK (npm "openai", installed under tests/server/openai_client by
// scripts/setup.sh) drives the server: models, completions, chat, streaming, error classes.
TEST_F(Sandwichd, OfficialOpenAINodeClientWorks) {
  const auto client_dir = source_dir() / "tests/server/openai_client";
  if (std::system("command -v node >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "node is not installed (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(client_dir / "node_modules/openai"))
    GTEST_SKIP() << "the openai npm package is missing: run scripts/setup.sh (npm ci in "
                 << client_dir << ")";
  const std::string prompt = "The little bird sang";
  const std::string expected = generate_cli(prompt, 48);
  ASSERT_EQ(expected.find('\''), std::string::npos);
  int rc = 0;
  const std::string out = run_capture("node " + (client_dir / "openai_sdk_test.mjs").string() +
                                          " http://127.0.0.1:" + std::to_string(daemon_->port()) +
                                          "/v1 unused-key '" + prompt + "' '" + expected + "'",
                                      &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("openai sdk: all checks passed"), std::string::npos) << out;
}

// --- Regression tests for the review of sandwichd's HTTP and OpenAI layers. ---

std::string raw_request(const std::string& method, const std::string& target,
                        const std::string& body, const std::string& version = "HTTP/1.1",
                        const std::string& extra_headers = {}) {
  return method + " " + target + " " + version +
         "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The "data:" payloads of an SSE body.
std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> events;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    events.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return events;
}

TEST_F(Sandwichd, InvalidUtf8InTheBodyOrPathIsAClientError) {
  auto c = client();
  // The parse error quotes the bad byte; the error body must still be valid JSON.
  expect_error(c.request("POST", "/v1/completions", "{\"prompt\":\"a\xff\"}"), 400,
               "not valid JSON");
  c.send_raw("GET /v1/\xff HTTP/1.1\r\nHost: x\r\n\r\n");
  expect_error(c.read_response(), 404);
  EXPECT_EQ(c.post("/v1/completions", completion("The cat", 2)).status, 200);
}

TEST_F(Sandwichd, NumbersTheJsonParserCannotHoldAre400) {
  auto c = client();
  expect_error(c.request("POST", "/v1/completions", R"({"prompt":"a","max_tokens":1e400})"), 400,
               "1e400");
  // Past INT64_MAX: out of range, not wrapped to -1.
  auto r =
      c.request("POST", "/v1/completions", R"({"prompt":"a","max_tokens":18446744073709551615})");
  expect_error(r, 400, "18446744073709551615");
  EXPECT_EQ(r.body.find("-1"), std::string::npos) << r.body;
  expect_error(c.request("POST", "/v1/completions", R"({"prompt":[18446744073709551615]})"), 400,
               "vocabulary");
}

double metric_at(uint16_t port, const std::string& name) {
  Client m(port);
  return metric(m, name);
}
const std::string kAborts = "sandwich:request_success_total{finished_reason=\"abort\"}";

// --max-num-seqs 1 makes every sequence wait for the one before it: a request of 64 sequences of
// 500 tokens keeps the queue nearly full for seconds.
json queue_filler(int prompts, bool stream = false, int n = 1) {
  return {{"prompt", std::vector<std::string>(static_cast<size_t>(prompts), "Once")},
          {"max_tokens", 500},
          {"ignore_eos", true},
          {"n", n},
          {"stream", stream}};
}

// Waits until the scheduler reports at least `waiting` queued sequences.
bool wait_for_waiting(uint16_t port, double waiting) {
  for (int i = 0; i < 500; ++i) {
    if (metric_at(port, "sandwich:num_requests_waiting") >= waiting) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(SandwichdQueue, AFullQueueRefusesStreamsWith429JsonAndQueuesNothing) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --max-num-seqs 1 --max-waiting 64 --shutdown-timeout 0");
  std::thread filler([&] { Client(d.port()).post("/v1/completions", queue_filler(64)); });
  ASSERT_TRUE(wait_for_waiting(d.port(), 50));
  // 60 sequences fit the queue's size but not what is left of it.
  json body = queue_filler(4, true, 15);
  auto r = Client(d.port()).post("/v1/completions", body);
  EXPECT_NE(r.content_type.find("application/json"), std::string::npos) << r.content_type;
  expect_error(r, 429, "retry later");
  body["stream"] = false;
  expect_error(Client(d.port()).post("/v1/completions", body), 429, "retry later");
  // Refused as a whole: none of its sequences was queued and then aborted.
  EXPECT_EQ(metric_at(d.port(), kAborts), 0);
  EXPECT_EQ(metric_at(d.port(), "sandwich:requests_rejected_total"), 2);
  EXPECT_EQ(d.terminate(), 0);  // aborts the filler
  filler.join();
}

TEST_F(Sandwichd, ARequestLargerThanTheQueueIs400NotRetryLater) {
  auto c = client();
  const double aborts = metric(c, kAborts);
  // 64 prompts x n=16 = 1024 sequences; the queue holds 1000.
  json body = queue_filler(64, false, 16);
  body["max_tokens"] = 4;
  expect_error(c.post("/v1/completions", body), 400, "1024 sequences");
  body["stream"] = true;
  expect_error(c.post("/v1/completions", body), 400, "at most 1000");
  EXPECT_EQ(metric(c, kAborts), aborts);
  EXPECT_EQ(metric(c, "sandwich:num_requests_waiting"), 0);
}

// A stream that ended in an error: an error event, then [DONE]; never finish_reason "abort".
void expect_stream_error(const std::vector<std::string>& events, const std::string& type) {
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json err = json::parse(events[events.size() - 2]);
  ASSERT_TRUE(err.contains("error")) << err.dump();
  EXPECT_EQ(err["error"]["type"], type) << err.dump();
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const json c = json::parse(events[i]);
    for (auto& ch : c["choices"]) EXPECT_NE(ch["finish_reason"], "abort") << events[i];
  }
}

TEST(SandwichdTimeout, ATimedOutRequestGets408AndAStreamAnErrorEvent) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --max-num-seqs 1 --max-waiting 200 --request-timeout 1");
  // 192 x 500 tokens one after another: far more than a second on any machine.
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(Client(d.port()).post("/v1/completions", queue_filler(64, false, 3)), 408);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  int status = 0;
  auto events = Client(d.port()).stream("/v1/completions", queue_filler(64, true, 3), &status);
  EXPECT_EQ(status, 200);
  expect_stream_error(events, "timeout_error");
  EXPECT_EQ(d.terminate(), 0);
}

TEST(SandwichdShutdown, RequestsAbortedAtShutdownGet503AndStreamsAnErrorEvent) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --max-num-seqs 1 --max-waiting 200 --shutdown-timeout 0");
  HttpResult whole;
  std::vector<std::string> events;
  int status = 0;
  std::thread a([&] { whole = Client(d.port()).post("/v1/completions", queue_filler(32)); });
  std::thread b([&] {
    events = Client(d.port()).stream("/v1/completions", queue_filler(32, true), &status);
  });
  ASSERT_TRUE(wait_for_waiting(d.port(), 40));  // both are queued
  EXPECT_EQ(d.terminate(), 0) << d.log();
  a.join();
  b.join();
  expect_error(whole, 503, "shut down");
  EXPECT_EQ(status, 200);
  expect_stream_error(events, "server_error");
}

TEST(SandwichdShutdown, DuringADrainHealthAndNewRequestsGet503) {
  SANDWICH_REQUIRE_DATA();
  // The drain lasts 5 s so that a loaded machine still asks its questions inside it; 192 x 500
  // tokens one at a time outlast it on any machine.
  Daemon d(model_args() + " --max-num-seqs 1 --max-waiting 200 --shutdown-timeout 5");
  HttpResult filler;
  std::thread a(
      [&] { filler = Client(d.port()).post("/v1/completions", queue_filler(64, false, 3)); });
  ASSERT_TRUE(wait_for_waiting(d.port(), 20));
  d.begin_terminate();
  // A refused connection (what a drain used to give) is status 0.
  auto answer = [&](auto&& ask) {
    try {
      Client c(d.port());
      return ask(c);
    } catch (const std::exception&) {
      return HttpResult{};
    }
  };
  HttpResult health;
  for (int i = 0; i < 200 && health.status != 503; ++i) {
    health = answer([](Client& c) { return c.get("/health"); });
    if (health.status != 503) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, R"({"status":"shutting down"})");
  expect_error(answer([](Client& c) { return c.post("/v1/completions", completion("hi", 2)); }),
               503, "shutting down");
  expect_error(answer([](Client& c) {
                 return c.post("/tokenize", {{"prompt", "hi"}});
               }),
               503, "shutting down");
  EXPECT_EQ(d.terminate(), 0) << d.log();
  a.join();
  expect_error(filler, 503, "shut down");  // past --shutdown-timeout
}

TEST_F(Sandwichd, LogprobOffsetsCountTextHeldBackForAStopString) {
  // " a dog" might start at " a": that text is held back while the next tokens arrive, but each
  // token's offset is still where its text starts in the completion.
  json body = {{"prompt", "Once upon"},
               {"max_tokens", 4},
               {"temperature", 0},
               {"logprobs", 0},
               {"stop", {" a dog"}}};
  auto r = client().post("/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json lp = r.j()["choices"][0]["logprobs"];
  EXPECT_EQ(lp["text_offset"], json({0, 2, 7, 8})) << r.body;
  size_t at = 0;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(lp["text_offset"][i], at);
    at += lp["tokens"][i].get<std::string>().size();
  }
  body["stream"] = true;
  json offsets = json::array();
  for (auto& e : client().stream("/v1/completions", body)) {
    if (e == "[DONE]") break;
    const json ch = json::parse(e)["choices"][0];
    if (!ch["logprobs"].is_null())
      for (auto& o : ch["logprobs"]["text_offset"]) offsets.push_back(o);
  }
  EXPECT_EQ(offsets, json({0, 2, 7, 8}));
}

TEST_F(Sandwichd, AHalfClosedClientStillGetsItsAnswer) {
  const double aborts = metric_at(daemon_->port(), kAborts);
  {
    Client c(daemon_->port());
    c.send_raw(raw_request("POST", "/v1/completions", completion("The cat", 20).dump()));
    c.shutdown_send();
    ASSERT_TRUE(c.readable_within(10000));
    auto r = c.read_response();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.j()["usage"]["completion_tokens"], 20);
  }
  {
    Client c(daemon_->port());
    c.send_raw(raw_request("POST", "/v1/completions", completion("The cat", 100, true).dump()));
    c.shutdown_send();
    const std::string all = c.read_until_close();
    auto events = sse_events(all);
    ASSERT_FALSE(events.empty()) << all;
    EXPECT_EQ(events.back(), "[DONE]") << all;
  }
  EXPECT_EQ(metric_at(daemon_->port(), kAborts), aborts);
}

TEST_F(Sandwichd, ExpectContinueIsAnsweredBeforeTheBody) {
  const std::string body = completion("The cat", 3).dump();
  Client c(daemon_->port());
  std::string head =
      raw_request("POST", "/v1/completions", body, "HTTP/1.1", "Expect: 100-continue\r\n");
  head.resize(head.size() - body.size());  // the header only
  c.send_raw(head);
  ASSERT_TRUE(c.readable_within(5000)) << "no 100 Continue";
  EXPECT_EQ(c.read_response().status, 100);
  c.send_raw(body);
  auto r = c.read_response();
  EXPECT_EQ(r.status, 200) << r.body;
  // A body over the limit is refused on its Content-Length, before it is sent.
  Client big(daemon_->port());
  big.send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 10000000\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(big.readable_within(5000));
  expect_error(big.read_response(), 413);
}

TEST_F(Sandwichd, Http10StreamsAreNotChunkedAndEndWithTheConnection) {
  Client c(daemon_->port());
  c.send_raw(
      raw_request("POST", "/v1/completions", completion("The cat", 10, true).dump(), "HTTP/1.0"));
  const std::string all = c.read_until_close();
  const size_t head_end = all.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << all;
  std::string head = all.substr(0, head_end);
  for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  EXPECT_EQ(head.rfind("http/1.0 200", 0), 0u) << head;
  EXPECT_EQ(head.find("chunked"), std::string::npos) << head;
  const std::string body = all.substr(head_end + 4);
  EXPECT_EQ(body.rfind("data: {", 0), 0u) << body;  // no chunk sizes
  auto events = sse_events(body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i)
    text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text,
            client().post("/v1/completions", completion("The cat", 10)).j()["choices"][0]["text"]);
}

TEST_F(Sandwichd, ErrorsHaveOpenAIShapes) {
  auto c = client();
  auto r = c.post("/v1/completions", {{"model", "gpt-4"}, {"prompt", "hi"}});
  expect_error(r, 404, "gpt-4");
  EXPECT_EQ(r.j()["error"]["type"], "invalid_request_error");
  EXPECT_EQ(r.j()["error"]["code"], "model_not_found");
  EXPECT_EQ(r.j()["error"]["param"], "model");
  const json user = {{"role", "user"}, {"content", "hi"}};
  expect_error(c.post("/v1/chat/completions",
                      {{"messages", {user}}, {"max_completion_tokens", 3}, {"max_tokens", "x"}}),
               400, "max_tokens");
  expect_error(c.post("/v1/chat/completions", {{"messages", {{{"role", "user"}}}}}), 400,
               "content");
  expect_error(c.post("/v1/chat/completions",
                      {{"messages", {{{"role", "system"}, {"content", nullptr}}, user}}}),
               400, "content");
  r = c.get("/v1/completions");
  expect_error(r, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  r = c.post("/v1/models", json::object());
  expect_error(r, 405);
  EXPECT_EQ(r.header("allow"), "GET");
  EXPECT_EQ(
      c.post("/v1/chat/completions", {{"messages", {user}}, {"max_completion_tokens", 3}}).status,
      200);
}

// The rank processes of a daemon serving a multi-rank plan, and the process that forks them.
struct DaemonRanks {
  int spawner = -1;
  std::vector<int> ranks;
  explicit DaemonRanks(const Daemon& d) {
    const std::vector<int> s = children_named(d.pid(), "sandwich-spawn");
    if (s.size() != 1) return;
    spawner = s[0];
    ranks = children_named(spawner, "sandwich-rank");
  }
};

// /health until it answers `status` (a few seconds at most).
HttpResult health_until(uint16_t port, int status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  HttpResult r = Client(port).get("/health");
  while (r.status != status && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    r = Client(port).get("/health");
  }
  return r;
}

TEST(SandwichdRanks, AKilledRankIsLoggedAndReplacedAndServingGoesOn) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --prefill-config 2x1 --decode-config 2x1");
  const json body = completion("Once upon a time", 40);
  const auto before = Client(d.port()).post("/v1/completions", body);
  ASSERT_EQ(before.status, 200) << before.body;
  DaemonRanks p(d);
  ASSERT_EQ(p.ranks.size(), 2u) << "spawner " << p.spawner;
  // A stopped spawner holds the re-formation back, so that /health can be seen saying so.
  ASSERT_EQ(kill(p.spawner, SIGSTOP), 0);
  ASSERT_EQ(kill(p.ranks[1], SIGKILL), 0);
  const HttpResult down = health_until(d.port(), 503);
  kill(p.spawner, SIGCONT);
  ASSERT_EQ(down.status, 503) << down.body;
  EXPECT_EQ(down.j()["status"], "restarting");
  EXPECT_NE(down.j()["message"].get<std::string>().find(std::to_string(p.ranks[1])),
            std::string::npos)
      << down.body;
  const auto killed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(health_until(d.port(), 200).status, 200);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count(),
            3.0);
  EXPECT_EQ(metric_at(d.port(), "sandwich:rank_restarts_total"), 1);
  EXPECT_GT(metric_at(d.port(), "sandwich:rank_last_recovery_seconds"), 0);
  const auto after = Client(d.port()).post("/v1/completions", body);
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.j()["choices"][0]["text"], before.j()["choices"][0]["text"]);
  const std::string log = d.log();
  EXPECT_NE(log.find("(pid " + std::to_string(p.ranks[1]) +
                     ") of the prefill and decode rank group 2x1 [0] [1] was killed by SIGKILL "
                     "(signal 9); re-forming the group"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("is serving again: re-formed in"), std::string::npos) << log;
  EXPECT_EQ(d.terminate(), 0) << d.log();
}

TEST(SandwichdRanks, LosingTheRankSpawnerExitsNonZeroWithTheReason) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --prefill-config 2x1 --decode-config 2x1");
  DaemonRanks p(d);
  ASSERT_GT(p.spawner, 0);
  ASSERT_EQ(kill(p.spawner, SIGKILL), 0);
  EXPECT_EQ(d.wait_exit(10), 1) << d.log();
  EXPECT_NE(d.log().find("sandwichd: fatal: the rank spawner (pid " + std::to_string(p.spawner) +
                         ") of the prefill and decode rank group 2x1 [0] [1] is gone"),
            std::string::npos)
      << d.log();
  // The ranks died with it (a zombie until whoever adopted it reaps it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  auto ended = [](int pid) { return proc_stat(pid).state == 0 || proc_stat(pid).state == 'Z'; };
  for (int r : p.ranks) {
    while (!ended(r) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(ended(r)) << r;
  }
}

// Issue 14's lock-out in miniature: connections that send their header a byte at a time fill
// the pool; /health and /metrics are still answered, and the header deadline frees the pool.
TEST(SandwichdSlowClients, SlowHeadersCannotLockOutHealthChecksOrOtherClientsForLong) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --max-connections 4 --max-connections-per-client 4 --header-timeout 1");
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<RawConnection>(d.port()));
    ASSERT_TRUE(slow.back()->send("GET /v1/models HTTP/1.1\r\nHo"));
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Client(d.port()).get("/health").status, 200);
  EXPECT_EQ(Client(d.port()).get("/metrics").status, 200);
  EXPECT_EQ(Client(d.port()).get("/v1/models").status, 503);
  int status = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5) &&
         (status = Client(d.port()).get("/v1/models").status) != 200)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(status, 200);
  EXPECT_GE(metric_at(d.port(), "sandwich:http_read_timeouts_total{phase=\"header\"}"), 4);
}

// A client that asks for a big stream (n=16, 500 tokens, 20 log-probs each) and never reads:
// the request is aborted once its send buffer is full, its KV freed, and it is counted.
TEST(SandwichdSlowClients, AStreamNobodyReadsIsAbortedAndItsKVFreed) {
  SANDWICH_REQUIRE_DATA();
  Daemon d(model_args() + " --max-num-seqs 16 --max-send-buffer 64KiB --write-timeout 2");
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 500}, {"ignore_eos", true},
                                {"n", 16},          {"logprobs", 20},    {"stream", true}}
                               .dump();
  RawConnection c(d.port(), 4096);
  ASSERT_TRUE(
      c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body));
  Client m(d.port());
  auto aborted = [&] {
    return metric(m, "sandwich:requests_aborted_total{reason=\"send_buffer_full\"}") +
           metric(m, "sandwich:requests_aborted_total{reason=\"write_timeout\"}");
  };
  // The wait ends as soon as the abort is counted; the bound is for a loaded sanitizer build,
  // where filling the buffers took over 10 s once.
  const auto t0 = std::chrono::steady_clock::now();
  while (aborted() < 1 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(40))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(aborted(), 1);
  double used = -1;
  for (int i = 0; i < 200 && (used = metric(m, "sandwich:kv_cache_blocks_used")) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(used, 0);
  // Cut off while generating, not after: its sequences were aborted, none ran to the end.
  EXPECT_EQ(metric(m, kAborts), 16);
  EXPECT_EQ(metric(m, "sandwich:request_success_total{finished_reason=\"length\"}"), 0);
  EXPECT_EQ(m.post("/v1/completions", completion("The cat", 5)).status, 200);
}

}  // namespace
}  // namespace sandwich::test
