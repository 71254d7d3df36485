#pragma once
// A scripted stand-in for an OpenAI-compatible server, for the serving benchmark's tests: it
// streams tokens with the delays a test asks for, speaks vLLM's or llama.cpp's /tokenize, and
// fails on demand (HTTP errors, dropped connections, hangs, bad events, a crash mid-run).
// Blocking Beast on loopback, one thread per connection; not for anything but tests.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandwich::test {

// How to answer one generation request.
struct FakeScript {
  int status = 200;            // not 200: an OpenAI error body with this status
  double ttft_s = 0.02;        // request read -> first token chunk
  double itl_s = 0.01;         // between token chunks
  std::vector<double> gaps_s;  // per-gap delays instead of itl_s (missing ones: itl_s)
  int tokens = -1;             // tokens to generate; -1: the request's max_tokens
  int tokens_per_chunk = 1;
  double done_delay_s = 0;  // last token -> usage block and [DONE]
  bool usage = true;        // send the usage block when the request asks for it
  bool done = true;         // send data: [DONE]
  bool finish_reason = true;
  int drop_after_chunks = -1;  // after this many token chunks, cut the connection
  bool hang = false;           // read the request, never answer
  bool error_event = false;    // one token, then an error event, then [DONE]
  bool garbage_event = false;  // one token, then an event that is not JSON
  bool not_sse = false;        // a non-streamed JSON completion despite stream=true
};

// Just the timings; other fields keep their defaults.
inline FakeScript timed(double ttft_s, double itl_s) {
  FakeScript s;
  s.ttft_s = ttft_s;
  s.itl_s = itl_s;
  return s;
}

enum class FakeTokenizer { None, Vllm, LlamaCpp };

struct FakeRequest {
  std::string path;
  nlohmann::json body;
  std::chrono::steady_clock::time_point at;
  int prompt_tokens = 0;  // by the fake tokenizer (chat: + the template's 3 tokens)
};

class FakeOpenAiServer {
 public:
  struct Options {
    FakeTokenizer tokenizer = FakeTokenizer::Vllm;
    int chars_per_token = 0;  // 0: one token per whitespace-separated word; n: n bytes a token
    std::string model = "fake-model";
    int max_model_len = 4096;
    bool models_route = true;  // answer GET /v1/models
    int chat_template_tokens = 3;
    // Chainable setters, so a test names only what it changes.
    Options& with_tokenizer(FakeTokenizer t, int bytes_per_token = 0) {
      tokenizer = t;
      chars_per_token = bytes_per_token;
      return *this;
    }
    Options& with_model(std::string id, int context) {
      model = std::move(id);
      max_model_len = context;
      return *this;
    }
    Options& without_models_route() {
      models_route = false;
      return *this;
    }
    Options& with_chat_template_tokens(int n) {
      chat_template_tokens = n;
      return *this;
    }
  };
  using ScriptFn = std::function<FakeScript(const nlohmann::json& body, int seq)>;

  explicit FakeOpenAiServer(Options options);
  FakeOpenAiServer() : FakeOpenAiServer(Options{}) {}
  ~FakeOpenAiServer();

  uint16_t port() const;
  std::string url() const;  // http://127.0.0.1:PORT
  // seq counts generation requests from 0 in the order they are read.
  void set_script(ScriptFn fn);
  void set_script(const FakeScript& s) {
    set_script([s](const nlohmann::json&, int) { return s; });
  }
  // One worker and a queue, so that latency grows with load: each generation request waits for
  // those read before it, then takes service_s to its first token; the rest streams as `base`
  // says. With arrivals scaled from one seed, attainment falls monotonically with the rate, so
  // a goodput search has one right answer.
  void set_queueing_script(double service_s, const FakeScript& base);
  // A crash: stops listening (new connections are refused) and cuts every open connection.
  void kill();
  std::vector<FakeRequest> requests() const;  // generation requests, in arrival order
  int max_concurrent() const;                 // most generation requests open at once
  int tokenize_calls() const;

  // The fake tokenizer's count of a prompt with BOS (what its usage block reports).
  int count(const std::string& text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::test
