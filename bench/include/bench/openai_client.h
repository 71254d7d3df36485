#pragma once
// The OpenAI side of one benchmark request: the body the client sends (same lengths for every
// server: max_tokens from the trace and ignore_eos) and the reading of the streamed answer
// into a RequestRecord.
#include <string>
#include <string_view>

#include "bench/http_client.h"
#include "bench/metrics.h"
#include "bench/sse.h"

namespace sandwich::bench {

enum class Api { Completions, Chat };
Api parse_api(const std::string& name);  // "completions" or "chat"; throws std::invalid_argument
const char* api_name(Api api);
const char* api_path(Api api);  // "/v1/completions" or "/v1/chat/completions"

// Streamed, greedy, ignore_eos, usage requested; extra_body (a JSON object, may be empty) is
// merged last so a user can override any field. Throws std::invalid_argument on a bad extra_body.
std::string openai_request_body(Api api, const std::string& model, const std::string& prompt,
                                int max_tokens, const std::string& extra_body = {});

// Reads one response. A chunk counts as a token arrival when it carries text (completions:
// choices[0].text, chat: choices[0].delta.content); the usage block gives the token counts.
class OpenAiStreamReader {
 public:
  explicit OpenAiStreamReader(RequestRecord& record) : rec_(record) {}
  // Body bytes of a 200 response as they arrive; t in seconds since the run started.
  void on_bytes(std::string_view bytes, double t);
  // The transport is done: fills end_s, ok and the error fields.
  void on_end(const HttpEnd& end, double t);

 private:
  void on_event(const std::string& data, double t);
  void fail(const std::string& kind, const std::string& message);
  RequestRecord& rec_;
  SseParser sse_;
  int events_ = 0;
  bool done_ = false, finished_ = false;
  std::string protocol_error_, stream_error_;
};

}  // namespace sandwich::bench
