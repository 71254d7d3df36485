// /v1/embeddings, prompt_logprobs and /props end to end with stories260K: every input shape
// OpenAI takes, base64 as OpenAI encodes it, errors in OpenAI's shape, usage; prompt logprobs in
// vLLM's shape, equal to what sandwich's own scoring path computes for the same tokens.
#include <bit>
#include <cmath>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/runtime/sampler.h"
#include "engine/scoring/perplexity.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

constexpr int kDim = 64;  // stories260K's

std::vector<uint8_t> base64_decode(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int v = value(c);
    EXPECT_GE(v, 0) << "not base64: " << c;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

std::vector<float> floats_of(const json& e) {
  std::vector<float> v;
  for (const json& x : e) v.push_back(x.get<float>());
  return v;
}

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "[" << i << "]";
}

// An OpenAI-shaped 400 naming `param`, with `code` when given.
void expect_bad(const HttpResult& r, const std::string& param, const std::string& code = {}) {
  EXPECT_EQ(r.status, 400) << r.body;
  const json j = r.j();
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r.body;
  EXPECT_EQ(j["error"]["param"], param) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  if (!code.empty()) {
    EXPECT_EQ(j["error"]["code"], code) << r.body;
  }
}

class Embeddings : public StoriesDaemonSuite<Embeddings> {
 public:
  static std::string daemon_args() { return "--max-num-seqs 8 --max-model-len 256"; }

 protected:
  HttpResult embed(const json& body) {
    Client c(daemon_->port());
    return c.post("/v1/embeddings", body);
  }
  std::vector<int32_t> tokens_of(const std::string& text) {
    Client c(daemon_->port());
    return c.post("/tokenize", {{"prompt", text}}).j()["tokens"].get<std::vector<int32_t>>();
  }
};

TEST_F(Embeddings, EveryInputShapeGivesUnitVectorsInOrderWithUsage) {
  const std::string a = "Once upon a time", b = "The cat sat on the mat.";
  const auto ta = tokens_of(a), tb = tokens_of(b);
  const json shapes[] = {a, json::array({a, b}), ta, json::array({ta, tb})};
  std::vector<std::vector<float>> first_of_each;
  for (const json& input : shapes) {
    SCOPED_TRACE(input.dump());
    auto r = embed({{"model", "stories"}, {"input", input}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = r.j();
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["model"], "stories");
    const size_t n = input.is_string() || input[0].is_number() ? 1 : 2;
    ASSERT_EQ(j["data"].size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(j["data"][i]["object"], "embedding");
      EXPECT_EQ(j["data"][i]["index"], i);
      const auto e = floats_of(j["data"][i]["embedding"]);
      EXPECT_EQ(e.size(), static_cast<size_t>(kDim));
      EXPECT_NEAR(norm(e), 1.0, 1e-5);
    }
    const size_t tokens = ta.size() + (n == 2 ? tb.size() : 0);
    EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(j["usage"]["total_tokens"], tokens);
    first_of_each.push_back(floats_of(j["data"][0]["embedding"]));
  }
  // A text and its token ids are the same input.
  for (const auto& e : first_of_each) expect_near(e, first_of_each[0], 1e-5);
  // Two different texts are not.
  auto two = embed({{"input", json::array({a, b})}}).j();
  EXPECT_NE(floats_of(two["data"][0]["embedding"]), floats_of(two["data"][1]["embedding"]));
}

TEST_F(Embeddings, Base64IsTheLittleEndianFloatsOfTheFloatAnswer) {
  const json input = json::array({"Once upon a time", "Lily liked to play."});
  auto f = embed({{"input", input}, {"encoding_format", "float"}});
  auto b = embed({{"input", input}, {"encoding_format", "base64"}, {"user", "someone"}});
  ASSERT_EQ(f.status, 200) << f.body;
  ASSERT_EQ(b.status, 200) << b.body;
  const json bj = b.j(), fj = f.j();
  for (int i = 0; i < 2; ++i) {
    const json& e = bj["data"][i]["embedding"];
    ASSERT_TRUE(e.is_string()) << b.body;
    const std::vector<uint8_t> bytes = base64_decode(e.get<std::string>());
    ASSERT_EQ(bytes.size(), kDim * sizeof(float));
    std::vector<float> decoded(kDim);
    for (int k = 0; k < kDim; ++k) {
      uint32_t u = 0;
      for (int byte = 3; byte >= 0; --byte) u = (u << 8) | bytes[k * 4 + byte];
      decoded[k] = std::bit_cast<float>(u);
    }
    expect_near(decoded, floats_of(fj["data"][i]["embedding"]), 1e-6);
  }
  EXPECT_EQ(embed({{"input", "x"}, {"dimensions", kDim}}).status, 200);
}

TEST_F(Embeddings, BadRequestsAreRefusedInOpenAIsShape) {
  expect_bad(embed({{"input", ""}}), "input");
  expect_bad(embed({{"input", json::array()}}), "input");
  expect_bad(embed({{"input", json::array({"a", ""})}}), "input");
  expect_bad(embed({{"input", json::array({json::array({1, 2}), json::array()})}}), "input");
  expect_bad(embed({{"model", "stories"}}), "input");
  expect_bad(embed({{"input", json::array({1, 99999})}}), "input");
  expect_bad(embed({{"input", json::array({true})}}), "input");
  expect_bad(embed({{"input", "a"}, {"dimensions", 32}}), "dimensions");
  expect_bad(embed({{"input", "a"}, {"encoding_format", "int8"}}), "encoding_format");
  expect_bad(embed({{"input", "a"}, {"user", 5}}), "user");
  // Past the context (256 tokens here), tokenized or not.
  expect_bad(embed({{"input", std::vector<int32_t>(257, 300)}}), "input",
             "context_length_exceeded");
  std::string many;
  for (int i = 0; i < 300; ++i) many += "dog ";
  expect_bad(embed({{"input", many}}), "input", "context_length_exceeded");
  // The whole context is fine.
  EXPECT_EQ(embed({{"input", std::vector<int32_t>(256, 300)}}).status, 200);
  // More inputs than OpenAI takes, and than this server queues.
  expect_bad(embed({{"input", std::vector<std::string>(2049, "a")}}), "input");
  expect_bad(embed({{"input", std::vector<std::string>(300, "a")}}), "input");
  auto r = embed({{"model", "gpt-4"}, {"input", "a"}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.j()["error"]["code"], "model_not_found");
  Client c(daemon_->port());
  EXPECT_EQ(c.get("/v1/embeddings").status, 405);
}

// Embeddings batched with each other and with generations equal their solo runs.
TEST_F(Embeddings, ConcurrentRequestsGiveTheSoloEmbeddings) {
  std::vector<std::string> texts;
  for (int i = 0; i < 6; ++i)
    texts.push_back("Story number " + std::to_string(i) + std::string(i * 7, 'a') + " ends.");
  std::vector<std::vector<float>> solo;
  for (const auto& t : texts)
    solo.push_back(floats_of(embed({{"input", t}}).j()["data"][0]["embedding"]));
  std::vector<std::future<HttpResult>> running;
  const uint16_t port = daemon_->port();
  running.push_back(std::async(std::launch::async, [port] {
    Client c(port);
    return c.post("/v1/completions",
                  {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}});
  }));
  for (const auto& t : texts)
    running.push_back(std::async(std::launch::async, [port, t] {
      Client c(port);
      return c.post("/v1/embeddings", {{"input", json::array({t, "Once upon a time"})}});
    }));
  ASSERT_EQ(running[0].get().status, 200);
  for (size_t i = 0; i < texts.size(); ++i) {
    const HttpResult r = running[i + 1].get();
    ASSERT_EQ(r.status, 200) << r.body;
    expect_near(floats_of(r.j()["data"][0]["embedding"]), solo[i], 1e-5);
  }
}

TEST(EmbeddingsPooling, LastPoolingIsTheLastTokensStateAndPropsSaySo) {
  SANDWICH_REQUIRE_DATA();
  Daemon mean(stories_daemon_args());
  Daemon last(stories_daemon_args() + " --pooling last --embeddings");
  Client cm(mean.port()), cl(last.port());
  const json body = {{"input", json::array({json::array({1, 300, 301, 302}), json::array({1})})}};
  const json m = cm.post("/v1/embeddings", body).j(), l = cl.post("/v1/embeddings", body).j();
  // One token: its mean is itself.
  expect_near(floats_of(l["data"][1]["embedding"]), floats_of(m["data"][1]["embedding"]), 1e-6);
  EXPECT_NE(floats_of(l["data"][0]["embedding"]), floats_of(m["data"][0]["embedding"]));
  EXPECT_EQ(cl.get("/props").j()["embedding_pooling"], "last");
  EXPECT_EQ(cm.get("/props").j()["embedding_pooling"], "mean");
}

TEST(EmbeddingsPooling, AnUnknownPoolingIsRefusedAtStart) {
  SANDWICH_REQUIRE_DATA();
  const std::string cmd =
      (bin_dir() / "sandwichd").string() + " " + stories_daemon_args() + " --pooling cls 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_NE(pclose(p), 0);
  EXPECT_NE(out.find("--pooling must be mean or last"), std::string::npos) << out;
}

class PromptLogprobs : public StoriesDaemonSuite<PromptLogprobs> {
 public:
  static std::string daemon_args() { return "--max-num-batched-tokens 16"; }

 protected:
  static void SetUpTestSuite() {
    StoriesDaemonSuite<PromptLogprobs>::SetUpTestSuite();
    if (!std::filesystem::exists(data_dir())) return;
    engine::LoadOptions lo;
    lo.model = (data_dir() / "models/stories260K/stories260K.bin").string();
    lo.tokenizer = data_dir() / "models/stories260K/tok512.bin";
    lo.threads = 1;
    model_ = engine::load_model(lo).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
    StoriesDaemonSuite<PromptLogprobs>::TearDownTestSuite();
  }
  static inline engine::Model* model_ = nullptr;
};

// Checks vLLM's shape: null, then per prompt token a map holding that token and the top k (ranks
// 1..k), each {logprob, rank, decoded_token}.
void expect_vllm_shape(const json& plp, const std::vector<int32_t>& prompt, int k) {
  ASSERT_TRUE(plp.is_array());
  ASSERT_EQ(plp.size(), prompt.size());
  EXPECT_TRUE(plp[0].is_null());
  for (size_t j = 1; j < prompt.size(); ++j) {
    const json& e = plp[j];
    ASSERT_TRUE(e.is_object()) << e;
    const std::string id = std::to_string(prompt[j]);
    ASSERT_TRUE(e.contains(id)) << "position " << j << ": " << e;
    EXPECT_GE(e.size(), static_cast<size_t>(k));
    EXPECT_LE(e.size(), static_cast<size_t>(k + 1));
    std::vector<int> ranks;
    for (auto it = e.begin(); it != e.end(); ++it) {
      EXPECT_TRUE(it.value()["logprob"].is_number());
      EXPECT_LE(it.value()["logprob"].get<double>(), 0.0);
      EXPECT_TRUE(it.value()["decoded_token"].is_string());
      ranks.push_back(it.value()["rank"]);
    }
    for (int r = 1; r <= k; ++r) EXPECT_NE(std::find(ranks.begin(), ranks.end(), r), ranks.end());
  }
}

TEST_F(PromptLogprobs, CompletionsGiveVllmsShapeAndTheScoringPathsValues) {
  // A prompt of ids from BOS on: three prefill chunks of 16 here.
  std::vector<int32_t> prompt{1};
  for (int i = 1; i < 40; ++i) prompt.push_back(300 + (i * 37) % 200);
  Client c(daemon_->port());
  auto r = c.post("/v1/completions", {{"prompt", prompt},
                                      {"max_tokens", 3},
                                      {"temperature", 0},
                                      {"prompt_logprobs", 4},
                                      {"n", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.j();
  ASSERT_EQ(j["choices"].size(), 2u);
  for (const json& ch : j["choices"]) expect_vllm_shape(ch["prompt_logprobs"], prompt, 4);
  // The choices of one prompt share them (computed once).
  EXPECT_EQ(j["choices"][0]["prompt_logprobs"], j["choices"][1]["prompt_logprobs"]);
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());

  // sandwich-perplexity's scorer over the same 40 tokens: positions 20..38 predict 21..39. Its
  // steps have other row counts than the server's (one chunk of 40 against two sequences' chunks
  // of 16), so sums may run in another order: equal to float noise, which a token 1e-5 likely
  // (logprob -12) shows as up to 3e-4.
  engine::ScorerOptions so;
  so.n_ctx = 40;
  so.batch = 40;
  so.config = engine::single_rank_config(1);
  engine::ChunkScorer scorer(*model_, so);
  const std::vector<float> rows = scorer.run(prompt);
  const int32_t V = model_->config.vocab_size;
  const json& plp = j["choices"][0]["prompt_logprobs"];
  for (int32_t p = engine::scored_first(40); p < 39; ++p) {
    const float* row = rows.data() + static_cast<size_t>(p - engine::scored_first(40)) * V;
    const int32_t t = prompt[p + 1];
    const json& got = plp[p + 1][std::to_string(t)];
    EXPECT_NEAR(got["logprob"].get<double>(), engine::Sampler::logprob_of(row, V, t), 1e-3)
        << "position " << p + 1;
    EXPECT_EQ(got["rank"], engine::Sampler::rank_of(row, V, t)) << "position " << p + 1;
  }
}

TEST_F(PromptLogprobs, ChatPutsThemOnTheResponseAndTextPromptsDecodeTheirTokens) {
  Client c(daemon_->port());
  auto r = c.post("/v1/chat/completions",
                  {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                   {"max_tokens", 2},
                   {"prompt_logprobs", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.j();
  ASSERT_TRUE(j.contains("prompt_logprobs")) << r.body;
  EXPECT_FALSE(j["choices"][0].contains("prompt_logprobs"));
  EXPECT_EQ(j["prompt_logprobs"].size(), j["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_TRUE(j["prompt_logprobs"][0].is_null());
  for (size_t i = 1; i < j["prompt_logprobs"].size(); ++i)
    EXPECT_EQ(j["prompt_logprobs"][i].size(), 1u) << j["prompt_logprobs"][i];

  auto t = c.post("/v1/completions",
                  {{"prompt", "Once upon a time"}, {"max_tokens", 1}, {"prompt_logprobs", 1}});
  ASSERT_EQ(t.status, 200) << t.body;
  const json tj = t.j();
  const json& plp = tj["choices"][0]["prompt_logprobs"];
  std::string text;
  const auto ids = c.post("/tokenize", {{"prompt", "Once upon a time"}}).j()["tokens"];
  for (size_t i = 1; i < plp.size(); ++i)
    text += plp[i][std::to_string(ids[i].get<int>())]["decoded_token"].get<std::string>();
  EXPECT_EQ(text, "Once upon a time");
}

TEST_F(PromptLogprobs, OutOfRangeOrStreamedIsRefused) {
  Client c(daemon_->port());
  expect_bad(c.post("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", 21}}),
             "prompt_logprobs");
  expect_bad(c.post("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", -1}}),
             "prompt_logprobs");
  expect_bad(c.post("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", "2"}}),
             "prompt_logprobs");
  expect_bad(c.post("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", 2}, {"stream", true}}),
             "prompt_logprobs");
  // null is "not asked".
  auto r = c.post("/v1/completions", {{"prompt", "a"}, {"prompt_logprobs", nullptr}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.j()["choices"][0].contains("prompt_logprobs"));
}

TEST_F(PromptLogprobs, PropsDescribesTheServer) {
  Client c(daemon_->port());
  auto r = c.get("/props");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.j();
  EXPECT_EQ(j["default_generation_settings"]["n_ctx"], 512);
  EXPECT_EQ(j["default_generation_settings"]["params"]["temperature"], 1.0);
  EXPECT_EQ(j["total_slots"], 64);
  EXPECT_NE(j["model_path"].get<std::string>().find("stories260K.bin"), std::string::npos);
  EXPECT_EQ(j["model_alias"], "stories");
  EXPECT_NE(j["chat_template"].get<std::string>().find("[INST]"), std::string::npos);
  EXPECT_NE(j["build_info"].get<std::string>().find("sandwichd"), std::string::npos);
  EXPECT_EQ(j["modalities"]["vision"], false);
  EXPECT_EQ(c.post("/props", json::object()).status, 405);
}

}  // namespace
}  // namespace sandwich::test
