#pragma once
// The OpenAI-compatible API over the engine: /v1/completions, /v1/chat/completions (both with
// SSE streaming), /v1/embeddings, /v1/models (and /v1/models/{id}), /tokenize, /detokenize,
// /health, /metrics, and llama-server's /props.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/enum_names.h"
#include "engine/formats/model.h"
#include "engine/runtime/scheduler.h"
#include "server/http_server.h"

namespace sandwich::server {

// How the model writes tool calls (--tool-call-parser, vLLM's names): Auto picks one from the chat
// template, else from the tokenizer's special tokens (choose_tool_call_format).
enum class ToolCallFormat { Auto, None, Llama3Json, Hermes, Mistral };
inline constexpr EnumName<ToolCallFormat> kToolCallFormatNames[] = {
    {ToolCallFormat::Auto, "auto"},
    {ToolCallFormat::Llama3Json, "llama3_json"},
    {ToolCallFormat::Hermes, "hermes"},
    {ToolCallFormat::Mistral, "mistral"},
    {ToolCallFormat::None, "none"}};

struct ServiceOptions {
  std::string served_model_name;  // the id clients put in "model"
  // When set, every route but /health (and /metrics, unless metrics_need_key) needs
  // 'Authorization: Bearer <key>'.
  std::optional<std::string> api_key;
  bool metrics_need_key = false;
  // "llama3", "llama2", "chatml", or a file holding a Jinja template; unset: the model's own
  std::optional<std::string> chat_template;
  ToolCallFormat tool_call_parser = ToolCallFormat::Auto;
  int request_timeout_seconds = 600;
  int max_n = 16;  // largest "n" a request may ask for
  // The engine's throughput line in the log every this many seconds while it works (0: never).
  double log_interval_seconds = 10;
  // Model routes (completions, chat, /tokenize, /detokenize) parse their body, render the chat
  // template and tokenize on these workers, never on the HTTP I/O threads. 0: the machine's
  // default (default_preprocess_threads(): cores / 8, within 2..8).
  int preprocess_threads = 0;
  // Requests waiting for a worker at most; beyond it a request gets 429 at once.
  int preprocess_queue = 64;
  // Prompt text one request may send (completions: its prompt strings together; chat: the
  // message contents, and the rendered prompt), checked before tokenizing: it bounds the time a
  // tokenizer takes. 8 MiB documents pass; a prompt over the context is refused after that.
  size_t max_prompt_bytes = 16u << 20;
  // How /v1/embeddings pools the final hidden states (--pooling).
  engine::Pooling pooling = engine::Pooling::Mean;
};

class OpenAiService {
 public:
  explicit OpenAiService(ServiceOptions options);
  ~OpenAiService();

  // The model is ready: from now on /health is 200 and the API answers.
  void attach(const engine::Model& model, engine::Scheduler& scheduler);
  // The chat template in use (once attached), for the start-up log.
  const std::string& chat_template_note() const;
  // The tool-call format in use and why (once attached), for the start-up log.
  const std::string& tool_call_note() const;
  // Draining: /health and every new model request get 503 "shutting down". Stops the engine's
  // log line too: call it before the scheduler goes away.
  void begin_shutdown();
  // Lets the requests being preprocessed finish (those still queued get 503) and joins the
  // workers: before the scheduler goes away. Called by the destructor too.
  void stop_preprocessing();
  // Requests still producing output.
  int active_requests() const;

  // Answers the cheap routes at once; queues model routes for the preprocessing workers.
  void handle(HttpRequest& req, std::shared_ptr<Responder> out);
  // For HttpServer's HeaderCheck: refuses a request that sent 'Expect: 100-continue' on its
  // header alone (a missing API key, a repeated Authorization), so that its body is never sent.
  std::optional<HttpResponse> check_headers(const HttpRequest& req) const;
  std::string metrics_text() const;
  // /metrics reports the HTTP server's counts too (set before the server starts).
  void report_http_stats(std::function<HttpServerStats()> stats);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::server
