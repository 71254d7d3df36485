#include "wire_format.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

std::vector<int> byte_values(const std::string& s) {
  std::vector<int> b;
  for (unsigned char ch : s) b.push_back(ch);
  return b;
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// /v1/completions: the text, and logprobs as parallel lists.
class CompletionsFormat final : public WireFormat {
 public:
  const char* id_prefix() const override { return "cmpl-"; }
  json logprob_entry(const TokenLogprobText& t, size_t text_offset) const override {
    json top = json::object();
    for (auto& [token, logprob] : t.top) top[token] = logprob;
    return {{"token", t.token}, {"logprob", t.logprob}, {"top", top}, {"offset", text_offset}};
  }

 protected:
  const char* chunk_object() const override { return "text_completion"; }
  const char* response_object() const override { return "text_completion"; }
  json logprobs(const json& entries) const override {
    json t = json::array(), v = json::array(), top = json::array(), off = json::array();
    for (auto& e : entries) {
      t.push_back(e["token"]);
      v.push_back(e["logprob"]);
      top.push_back(e["top"]);
      off.push_back(e["offset"]);
    }
    return {{"tokens", t}, {"token_logprobs", v}, {"top_logprobs", top}, {"text_offset", off}};
  }
  bool put_opening(json&) const override { return false; }
  void put_delta(json& choice, const ChoiceDelta& d) const override { choice["text"] = d.text; }
  void put_result(json& choice, const ChoiceResult& r) const override { choice["text"] = r.text; }
  bool prompt_logprobs_in_choices() const override { return true; }
};

// /v1/chat/completions: an assistant message, and logprobs as a list of entries.
class ChatCompletionsFormat final : public WireFormat {
 public:
  const char* id_prefix() const override { return "chatcmpl-"; }
  json logprob_entry(const TokenLogprobText& t, size_t) const override {
    json top = json::array();
    for (auto& [token, logprob] : t.top)
      top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", byte_values(token)}});
    return {{"token", t.token},
            {"logprob", t.logprob},
            {"bytes", byte_values(t.token)},
            {"top_logprobs", top}};
  }

 protected:
  const char* chunk_object() const override { return "chat.completion.chunk"; }
  const char* response_object() const override { return "chat.completion"; }
  json logprobs(const json& entries) const override { return {{"content", entries}}; }
  bool put_opening(json& choice) const override {
    choice["delta"] = {{"role", "assistant"}, {"content", ""}};
    return true;
  }
  void put_delta(json& choice, const ChoiceDelta& d) const override {
    json delta = json::object();
    // The last chunk, and one with tool calls, have content only when they bring text.
    if (!d.text.empty() || (!d.finish_reason && !d.tool_calls)) delta["content"] = d.text;
    if (d.tool_calls) delta["tool_calls"] = *d.tool_calls;
    choice["delta"] = delta;
  }
  void put_result(json& choice, const ChoiceResult& r) const override {
    json message = {{"role", "assistant"}, {"content", r.text}};
    if (r.tool_calls) {
      // As OpenAI: null content beside the calls unless the model wrote text too.
      if (r.text.find_first_not_of(" \t\r\n") == std::string::npos) message["content"] = nullptr;
      message["tool_calls"] = *r.tool_calls;
    }
    choice["message"] = message;
  }
  bool prompt_logprobs_in_choices() const override { return false; }
};

}  // namespace

std::optional<json> WireFormat::opening_chunk(const ResponseHeader& h, size_t index) const {
  json choice = {{"index", index}};
  if (!put_opening(choice)) return std::nullopt;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  return json{{"id", h.id},
              {"object", chunk_object()},
              {"created", h.created},
              {"model", h.model},
              {"choices", {choice}}};
}

json WireFormat::chunk(const ResponseHeader& h, const ChoiceDelta& d) const {
  json choice = {{"index", d.index}};
  put_delta(choice, d);
  choice["logprobs"] = d.logprobs ? logprobs(*d.logprobs) : json(nullptr);
  choice["finish_reason"] = d.finish_reason ? json(*d.finish_reason) : json(nullptr);
  return {{"id", h.id},
          {"object", chunk_object()},
          {"created", h.created},
          {"model", h.model},
          {"choices", {choice}}};
}

json WireFormat::usage_chunk(const ResponseHeader& h, const Usage& u) const {
  return {{"id", h.id},       {"object", chunk_object()}, {"created", h.created},
          {"model", h.model}, {"choices", json::array()}, {"usage", usage_json(u)}};
}

json WireFormat::response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices,
                          const Usage& u) const {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& r = choices[i];
    json choice = {{"index", i}, {"finish_reason", r.finish_reason}};
    put_result(choice, r);
    choice["logprobs"] = r.logprobs ? logprobs(*r.logprobs) : json(nullptr);
    if (r.prompt_logprobs && prompt_logprobs_in_choices())
      choice["prompt_logprobs"] = *r.prompt_logprobs;
    cs.push_back(choice);
  }
  json j = {{"id", h.id},           {"object", response_object()},
            {"created", h.created}, {"model", h.model},
            {"choices", cs},        {"usage", usage_json(u)}};
  if (!choices.empty() && choices[0].prompt_logprobs && !prompt_logprobs_in_choices())
    j["prompt_logprobs"] = *choices[0].prompt_logprobs;
  return j;
}

const WireFormat& completions_format() {
  static const CompletionsFormat f;
  return f;
}

const WireFormat& chat_completions_format() {
  static const ChatCompletionsFormat f;
  return f;
}

std::optional<std::string> openai_finish_reason(const engine::RequestOutput& o) {
  if (o.finish_reason == engine::FinishReason::Abort) return std::nullopt;
  return std::string(engine::finish_reason_name(o.finish_reason));
}

std::string sse_event(std::string_view data) {
  std::string s = "data: ";
  s += data;
  s += "\n\n";
  return s;
}

}  // namespace sandwich::server
