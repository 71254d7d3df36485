#pragma once
// The JSON of /v1/completions and /v1/chat/completions: the two formats say the same things
// (a choice's text, logprobs, finish reason; usage) in different shapes, behind one interface.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/scheduler.h"

namespace sandwich::server {

// What every chunk of a stream, or the whole response, carries.
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

// A generated token's logprob, and its alternatives', with the tokens as text.
struct TokenLogprobText {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

// What one stream chunk says of one choice.
struct ChoiceDelta {
  size_t index = 0;
  std::string text;
  std::optional<std::string> finish_reason;  // set in its last chunk
  std::optional<nlohmann::json> logprobs;    // the new tokens' logprob entries, when there are any
  std::optional<nlohmann::json> tool_calls;  // chat: new complete tool calls (with "index")
};

// One choice of a whole (not streamed) response.
struct ChoiceResult {
  std::string text;
  std::string finish_reason;
  std::optional<nlohmann::json> logprobs;  // its tokens' logprob entries, when asked for
  // Chat: the calls it made; the content is then null unless the model wrote text besides them.
  std::optional<nlohmann::json> tool_calls;
  // vLLM's prompt_logprobs, when asked for: null, then an entry per prompt token.
  std::optional<nlohmann::json> prompt_logprobs;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  // Of the response id ("cmpl-", "chatcmpl-").
  virtual const char* id_prefix() const = 0;
  // A token's logprob entry; text_offset: the completion's bytes before the token.
  virtual nlohmann::json logprob_entry(const TokenLogprobText& t, size_t text_offset) const = 0;

  // The chunk a choice's stream opens with, before any of its text, when the format has one
  // (chat: the role alone, as OpenAI and vLLM send it).
  std::optional<nlohmann::json> opening_chunk(const ResponseHeader& h, size_t index) const;
  nlohmann::json chunk(const ResponseHeader& h, const ChoiceDelta& d) const;
  // The stream's last chunk when the client asked for usage: no choices.
  nlohmann::json usage_chunk(const ResponseHeader& h, const Usage& u) const;
  nlohmann::json response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices,
                          const Usage& u) const;

 protected:
  virtual const char* chunk_object() const = 0;
  virtual const char* response_object() const = 0;
  // A choice's "logprobs" value, made of its entries.
  virtual nlohmann::json logprobs(const nlohmann::json& entries) const = 0;
  // The opening chunk's choice content; false: the format has no opening chunk.
  virtual bool put_opening(nlohmann::json& choice) const = 0;
  // The choice's text, in a chunk and in a whole response.
  virtual void put_delta(nlohmann::json& choice, const ChoiceDelta& d) const = 0;
  virtual void put_result(nlohmann::json& choice, const ChoiceResult& r) const = 0;
  // Where vLLM puts prompt_logprobs: in each choice (completions), or once in the response
  // (chat, whose choices share one prompt).
  virtual bool prompt_logprobs_in_choices() const = 0;
};

const WireFormat& completions_format();
const WireFormat& chat_completions_format();

// The only place that reads RequestOutput::finish_reason: the finish_reason a finished sequence
// reports, or none when it was aborted (never an OpenAI finish_reason: the request fails).
std::optional<std::string> openai_finish_reason(const engine::RequestOutput& o);

// Server-sent events.
std::string sse_event(std::string_view data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace sandwich::server
