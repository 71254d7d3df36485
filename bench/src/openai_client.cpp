#include "bench/openai_client.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace sandwich::bench {

using json = nlohmann::json;

Api parse_api(const std::string& name) {
  if (name == "completions") return Api::Completions;
  if (name == "chat") return Api::Chat;
  throw std::invalid_argument("--api must be 'completions' or 'chat', not '" + name + "'");
}

const char* api_name(Api api) {
  return api == Api::Chat ? "chat" : "completions";
}
const char* api_path(Api api) {
  return api == Api::Chat ? "/v1/chat/completions" : "/v1/completions";
}

std::string openai_request_body(Api api, const std::string& model, const std::string& prompt,
                                int max_tokens, const std::string& extra_body) {
  json j = json::object();
  if (!model.empty()) j["model"] = model;
  if (api == Api::Chat)
    j["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
  else
    j["prompt"] = prompt;
  j["max_tokens"] = max_tokens;
  j["ignore_eos"] = true;  // every server generates exactly the trace's output length
  j["temperature"] = 0;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  if (!extra_body.empty()) {
    json extra;
    try {
      extra = json::parse(extra_body);
    } catch (const json::exception& e) {
      throw std::invalid_argument(std::string("--extra-body is not JSON: ") + e.what());
    }
    if (!extra.is_object()) throw std::invalid_argument("--extra-body must be a JSON object");
    j.update(extra);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::string clip(std::string_view s, size_t n = 200) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "...";
}

std::string error_message(const json& e) {
  if (e.is_object() && e.contains("message") && e["message"].is_string())
    return e["message"].get<std::string>();
  if (e.is_string()) return e.get<std::string>();
  return clip(e.dump());
}

const std::string* text_of(const json& choice) {
  if (!choice.is_object()) return nullptr;
  if (auto it = choice.find("text"); it != choice.end() && it->is_string())
    return it->get_ptr<const std::string*>();
  if (auto d = choice.find("delta"); d != choice.end() && d->is_object())
    if (auto c = d->find("content"); c != d->end() && c->is_string())
      return c->get_ptr<const std::string*>();
  return nullptr;
}

}  // namespace

void OpenAiStreamReader::on_bytes(std::string_view bytes, double t) {
  sse_.feed(bytes, [&](const std::string& data) { on_event(data, t); });
}

void OpenAiStreamReader::on_event(const std::string& data, double t) {
  ++events_;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (protocol_error_.empty()) protocol_error_ = "an event is not a JSON object: " + clip(data);
    return;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    if (stream_error_.empty()) stream_error_ = error_message(*e);
    return;
  }
  if (auto c = j.find("choices"); c != j.end() && c->is_array()) {
    for (const auto& choice : *c) {
      // Only the first choice counts (the benchmark asks for one).
      if (!choice.is_object()) continue;
      if (auto i = choice.find("index");
          i != choice.end() && i->is_number_integer() && i->get<int>() != 0)
        continue;
      if (const std::string* text = text_of(choice); text && !text->empty())
        rec_.chunk_s.push_back(t);
      if (auto f = choice.find("finish_reason"); f != choice.end() && !f->is_null())
        finished_ = true;
      break;
    }
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
      rec_.usage_prompt_tokens = p->get<int>();
    if (auto g = u->find("completion_tokens"); g != u->end() && g->is_number_integer())
      rec_.usage_completion_tokens = g->get<int>();
  }
}

void OpenAiStreamReader::fail(const std::string& kind, const std::string& message) {
  rec_.ok = false;
  rec_.error_kind = kind;
  rec_.error_message = message;
}

void OpenAiStreamReader::on_end(const HttpEnd& end, double t) {
  rec_.end_s = t;
  rec_.http_status = end.status;
  if (!end.error_kind.empty()) {
    // A stream that said [DONE] is complete even if the connection then broke.
    if (done_ && end.status == 200 && end.error_kind == "disconnected" && protocol_error_.empty() &&
        stream_error_.empty() && !rec_.chunk_s.empty()) {
      rec_.ok = true;
      return;
    }
    return fail(end.error_kind, end.message);
  }
  if (end.status != 200) {
    json j = json::parse(end.body, nullptr, false);
    std::string msg = !j.is_discarded() && j.is_object() && j.contains("error")
                          ? error_message(j["error"])
                          : clip(end.body);
    return fail("http", "HTTP " + std::to_string(end.status) + (msg.empty() ? "" : ": " + msg));
  }
  sse_.finish([&](const std::string& data) { on_event(data, t); });
  if (!protocol_error_.empty()) return fail("protocol", protocol_error_);
  if (!stream_error_.empty()) return fail("stream_error", "the server reported: " + stream_error_);
  if (events_ == 0)
    return fail("protocol", "no server-sent events in the 200 response (was stream=true ignored?)");
  if (!done_ && !finished_)
    return fail("incomplete", "the stream ended without [DONE] or a finish_reason");
  if (rec_.chunk_s.empty()) return fail("no_output", "the stream carried no text");
  rec_.ok = true;
}

}  // namespace sandwich::bench
