#include "server/openai_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/chat_template.h"
#include "engine/tokenizer.h"
#include "prometheus.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ApiError {
  int status;
  std::string message, type, param, code;
  std::vector<std::pair<std::string, std::string>> headers = {};
};

[[noreturn]] void bad(const std::string& message, const std::string& param = {}) {
  throw ApiError{400, message, "invalid_request_error", param, {}};
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "number";
  }
}

// An integer as int64, or none when it is an unsigned one past INT64_MAX (get<int64_t> would
// wrap it to a negative number).
std::optional<int64_t> as_int64(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return v.get<int64_t>();
}

// Typed, range-checked access to request fields; absent or null fields keep their default.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  const json* get(const char* k) const {
    auto it = j_.find(k);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  double number(const char* k, double def, double lo, double hi) const {
    const json* v = get(k);
    if (!v) return def;
    if (!v->is_number()) bad(std::string("'") + k + "' must be a number, not " + type_name(*v), k);
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi))
      bad(std::string("'") + k + "' must be between " + fmt(lo) + " and " + fmt(hi) + ", got " +
              fmt(d),
          k);
    return d;
  }
  int64_t integer(const char* k, int64_t def, int64_t lo, int64_t hi) const {
    const json* v = get(k);
    if (!v) return def;
    if (!v->is_number_integer())
      bad(std::string("'") + k + "' must be an integer, not " + type_name(*v), k);
    const auto d = as_int64(*v);
    if (!d || *d < lo || *d > hi)
      bad(std::string("'") + k + "' must be between " + std::to_string(lo) + " and " +
              std::to_string(hi) + ", got " + v->dump(),
          k);
    return *d;
  }
  bool boolean(const char* k, bool def) const {
    const json* v = get(k);
    if (!v) return def;
    if (!v->is_boolean())
      bad(std::string("'") + k + "' must be a boolean, not " + type_name(*v), k);
    return v->get<bool>();
  }
  std::optional<std::string> string(const char* k) const {
    const json* v = get(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) bad(std::string("'") + k + "' must be a string, not " + type_name(*v), k);
    return v->get<std::string>();
  }

 private:
  static std::string fmt(double d) {
    std::ostringstream os;
    os << d;
    return os.str();
  }
  const json& j_;
};

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (int i = 0; i < 24; ++i) s += hex[rng() % 16];
  return s;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpResponse json_response(const json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

HttpResponse to_response(const ApiError& e) {
  HttpResponse r = json_error(e.status, e.message, e.type, e.param, e.code);
  r.headers = e.headers;
  return r;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The answer to a request that ended in an abort other than a cancel: a timeout is the client's
// to retry (408), a shutdown is the server going away (503), the rest is the server's fault.
HttpResponse abort_error(const RequestOutput& o) {
  switch (o.abort_reason) {
    case AbortReason::Timeout:
      return json_error(
          408,
          "the request did not finish within the server's --request-timeout; retry it, or ask for "
          "fewer tokens",
          "timeout_error");
    case AbortReason::Shutdown:
      return json_error(503, "the server shut down before the request finished; retry it",
                        "server_error");
    default:
      return json_error(500, "the engine failed while generating this request: " + o.error,
                        "server_error");
  }
}

// One request (all its prompts and choices) while the engine works on it.
struct Job : std::enable_shared_from_this<Job> {
  enum class Kind { Completion, Chat };
  Kind kind = Kind::Completion;
  std::string id, model;
  int64_t created = 0;
  bool stream = false, include_usage = false;
  int32_t logprobs = -1;  // completions: top n; chat: top_logprobs when logprobs = true
  std::shared_ptr<Responder> out;
  const Tokenizer* tok = nullptr;
  Scheduler* scheduler = nullptr;
  std::atomic<int>* active = nullptr;
  size_t n_per_prompt = 1;

  struct Choice {
    std::string text, finish_reason;
    int32_t prompt_tokens = 0, completion_tokens = 0;
    bool done = false, sent_role = false;
    int32_t prev_token = -1;
    // Bytes of the completion before the next token's text. Not text.size(): text lags behind
    // the tokens while a possible stop string or a partial UTF-8 character is held back.
    size_t token_offset = 0;
    json logprob_entries = json::array();  // chat: content entries
    json lp_tokens = json::array(), lp_values = json::array(), lp_top = json::array(),
         lp_offsets = json::array();
  };
  std::mutex mu;
  std::vector<Choice> choices;
  std::vector<uint64_t> ids;  // engine ids, by choice
  int remaining = 0;
  bool gone = false;    // the client disconnected
  bool closed = false;  // answered, or nobody to answer: later outputs are dropped
  // The first abort other than a cancel. The request then fails as a whole: its other sequences
  // are cancelled, and the error goes out once all of them are gone (so that a client retrying
  // at once finds their room free).
  std::optional<HttpResponse> failure;
  // Streams: the engine may produce output before the response is started (the stream starts
  // only once every sequence is queued, so a full queue can still be a 429). Until then what it
  // says waits here.
  bool started = false, held_end = false;
  std::string held;
  std::optional<HttpResponse> held_error;

  static std::vector<int> byte_values(const std::string& s) {
    std::vector<int> b;
    for (unsigned char ch : s) b.push_back(ch);
    return b;
  }
  std::string token_str(int32_t t, int32_t prev) const {
    return tok->piece(t, prev < 0 ? t : prev);
  }

  json logprobs_delta(Choice& c, const RequestOutput& o) {
    json entries = json::array();
    for (const auto& lp : o.logprobs) {
      const std::string s = token_str(lp.token, c.prev_token);
      if (kind == Kind::Chat) {
        json top = json::array();
        for (auto& t : lp.top) {
          const std::string ts = token_str(t.token, c.prev_token);
          top.push_back({{"token", ts}, {"logprob", t.logprob}, {"bytes", byte_values(ts)}});
        }
        entries.push_back({{"token", s},
                           {"logprob", lp.logprob},
                           {"bytes", byte_values(s)},
                           {"top_logprobs", top}});
      } else {
        json top = json::object();
        for (auto& t : lp.top) top[token_str(t.token, c.prev_token)] = t.logprob;
        entries.push_back(
            {{"token", s}, {"logprob", lp.logprob}, {"top", top}, {"offset", c.token_offset}});
      }
      c.token_offset += s.size();
      c.prev_token = lp.token;
    }
    return entries;
  }

  void on_output(size_t idx, const RequestOutput& o) {
    std::string chunk;
    bool end_stream = false, whole = false;
    std::optional<HttpResponse> error;
    std::vector<uint64_t> to_cancel;
    {
      std::lock_guard<std::mutex> lock(mu);
      Choice& c = choices[idx];
      bool all_done = false;
      if (o.finished) {
        c.done = true;
        all_done = --remaining == 0;
        if (active && all_done) --*active;
      }
      if (closed) return;
      if (o.finished && o.finish_reason == "abort") {
        // Never an OpenAI finish_reason. A cancel first means nobody is listening any more.
        if (o.abort_reason == AbortReason::Cancelled && !failure) {
          closed = true;
          return;
        }
        if (!failure) {
          failure = abort_error(o);
          for (size_t i = 0; i < choices.size() && i < ids.size(); ++i)
            if (!choices[i].done) to_cancel.push_back(ids[i]);
        }
      }
      if (failure) {
        if (all_done) {
          closed = true;
          if (!stream) {
            error = *failure;
          } else if (!started) {
            held_error = *failure;
          } else {
            chunk = "data: " + failure->body + "\n\ndata: [DONE]\n\n";
            end_stream = true;
          }
        }
      } else {
        c.text += o.text;
        c.prompt_tokens = o.prompt_tokens;
        c.completion_tokens = o.completion_tokens;
        json lp = logprobs >= 0 ? logprobs_delta(c, o) : json::array();
        if (logprobs < 0 && !o.tokens.empty()) c.prev_token = o.tokens.back();
        if (o.finished) c.finish_reason = o.finish_reason;
        if (!stream) {
          for (auto& e : lp) {
            if (kind == Kind::Chat) {
              c.logprob_entries.push_back(e);
            } else {
              c.lp_tokens.push_back(e["token"]);
              c.lp_values.push_back(e["logprob"]);
              c.lp_top.push_back(e["top"]);
              c.lp_offsets.push_back(e["offset"]);
            }
          }
          whole = all_done;
        } else {
          if (!o.text.empty() || o.finished || !lp.empty()) chunk = stream_chunk(idx, c, o, lp);
          if (all_done) {
            if (include_usage) {
              const json u = {{"id", id},       {"object", chunk_object()}, {"created", created},
                              {"model", model}, {"choices", json::array()}, {"usage", usage()}};
              chunk += "data: " + dump(u) + "\n\n";
            }
            chunk += "data: [DONE]\n\n";
            end_stream = true;
          }
        }
      }
      if (stream && !started) {
        held += chunk;
        held_end |= end_stream;
        chunk.clear();
        end_stream = false;
      }
    }
    for (auto id : to_cancel) scheduler->cancel(id);
    if (error) out->reply(std::move(*error));
    if (!chunk.empty()) out->send(std::move(chunk));
    if (end_stream) out->end();
    if (whole) finish_whole();
  }

  // Streams: every sequence is queued; start the response and pass on what was held.
  void start() {
    std::lock_guard<std::mutex> lock(mu);
    // Under the lock, so that nothing the engine sends later can overtake it.
    if (held_error) {
      out->reply(std::move(*held_error));
    } else {
      out->start_stream(200, "text/event-stream");
      if (!held.empty()) out->send(std::move(held));
      if (held_end) out->end();
    }
    started = true;
  }

  static std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  const char* chunk_object() const {
    return kind == Kind::Chat ? "chat.completion.chunk" : "text_completion";
  }

  json usage() const {
    int64_t p = 0, g = 0;
    // Each prompt counts once even when n > 1 asks for several choices of it.
    for (size_t i = 0; i < choices.size(); ++i) {
      g += choices[i].completion_tokens;
      if (i % n_per_prompt == 0) p += choices[i].prompt_tokens;
    }
    return {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
  }

  std::string stream_chunk(size_t idx, Choice& c, const RequestOutput& o, const json& lp) {
    json choice = {{"index", idx}};
    if (kind == Kind::Chat) {
      json delta = json::object();
      if (!c.sent_role) {
        delta["role"] = "assistant";
        c.sent_role = true;
      }
      if (!o.text.empty() || !o.finished) delta["content"] = o.text;
      choice["delta"] = delta;
      choice["logprobs"] = logprobs >= 0 && !lp.empty() ? json({{"content", lp}}) : json(nullptr);
    } else {
      choice["text"] = o.text;
      if (logprobs >= 0 && !lp.empty()) {
        json t = json::array(), v = json::array(), top = json::array(), off = json::array();
        for (auto& e : lp) {
          t.push_back(e["token"]);
          v.push_back(e["logprob"]);
          top.push_back(e["top"]);
          off.push_back(e["offset"]);
        }
        choice["logprobs"] = {
            {"tokens", t}, {"token_logprobs", v}, {"top_logprobs", top}, {"text_offset", off}};
      } else {
        choice["logprobs"] = nullptr;
      }
    }
    choice["finish_reason"] = o.finished ? json(c.finish_reason) : json(nullptr);
    json j = {{"id", id},
              {"object", chunk_object()},
              {"created", created},
              {"model", model},
              {"choices", {choice}}};
    return "data: " + dump(j) + "\n\n";
  }

  void finish_whole() {
    json cs = json::array();
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < choices.size(); ++i) {
      Choice& c = choices[i];
      json choice = {{"index", i}, {"finish_reason", c.finish_reason}};
      if (kind == Kind::Chat) {
        choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        choice["logprobs"] = logprobs >= 0 ? json({{"content", c.logprob_entries}}) : json(nullptr);
      } else {
        choice["text"] = c.text;
        choice["logprobs"] = logprobs >= 0 ? json({{"tokens", c.lp_tokens},
                                                   {"token_logprobs", c.lp_values},
                                                   {"top_logprobs", c.lp_top},
                                                   {"text_offset", c.lp_offsets}})
                                           : json(nullptr);
      }
      cs.push_back(choice);
    }
    json j = {{"id", id},
              {"object", kind == Kind::Chat ? "chat.completion" : "text_completion"},
              {"created", created},
              {"model", model},
              {"choices", cs},
              {"usage", usage()}};
    out->reply(json_response(j));
  }
};

}  // namespace

struct OpenAiService::Impl {
  ServiceOptions opt;
  const Model* model = nullptr;
  Scheduler* scheduler = nullptr;
  std::atomic<bool> ready{false}, shutting_down{false};
  std::atomic<int> active{0};
  ChatFormat chat_format = ChatFormat::Llama2;
  std::atomic<uint64_t> http_requests{0}, rejected{0};

  void authorize(const HttpRequest& r) const {
    if (!opt.api_key) return;
    // "<scheme> <token>", the scheme case-insensitive (RFC 9110 section 11.1).
    const std::string h = r.header("authorization");
    const size_t sp = h.find(' ');
    const size_t tok = sp == std::string::npos ? sp : h.find_first_not_of(' ', sp);
    const bool ok = tok != std::string::npos &&
                    iequals(std::string_view(h).substr(0, sp), "bearer") &&
                    h.substr(tok) == *opt.api_key;
    if (!ok)
      throw ApiError{401,
                     "invalid or missing API key (send 'Authorization: Bearer <key>')",
                     "authentication_error",
                     {},
                     "invalid_api_key"};
  }

  static bool needs_key(const std::string& path) {
    return path == "/v1/models" || path == "/v1/completions" || path == "/v1/chat/completions";
  }

  json parse_body(const HttpRequest& r) const {
    json j;
    try {
      j = json::parse(r.body);
    } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e400)
      bad(std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) bad("the request body must be a JSON object");
    return j;
  }

  void check_model(const Fields& f) const {
    auto m = f.string("model");
    if (m && *m != opt.served_model_name)
      throw ApiError{404,
                     "The model `" + *m + "` does not exist (this server serves `" +
                         opt.served_model_name + "`).",
                     "invalid_request_error", "model", "model_not_found"};
  }

  void require_ready() const {
    if (shutting_down) throw ApiError{503, "the server is shutting down", "server_error", {}, {}};
    if (!ready) throw ApiError{503, "the model is still loading", "server_error", {}, {}};
  }

  // prompt: string, token ids, list of strings, or list of token-id lists.
  std::vector<std::vector<int32_t>> prompts(const json& j) const {
    const json* p = j.contains("prompt") && !j["prompt"].is_null() ? &j["prompt"] : nullptr;
    if (!p) bad("'prompt' is required", "prompt");
    const Tokenizer& tok = *model->tokenizer;
    auto ids_of = [&](const json& arr) {
      std::vector<int32_t> ids;
      for (auto& v : arr) {
        if (!v.is_number_integer()) bad("'prompt' token ids must be integers", "prompt");
        const auto t = as_int64(v);
        if (!t || *t < 0 || *t >= model->config.vocab_size)
          bad("'prompt' token id " + v.dump() + " is outside the vocabulary", "prompt");
        ids.push_back(static_cast<int32_t>(*t));
      }
      return ids;
    };
    auto text_of = [&](const std::string& s) { return tok.encode(s, tok.add_bos_default()); };
    std::vector<std::vector<int32_t>> out;
    if (p->is_string()) {
      out.push_back(text_of(p->get<std::string>()));
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
      out.push_back(ids_of(*p));
    } else if (p->is_array() && !p->empty()) {
      for (auto& e : *p) {
        if (e.is_string())
          out.push_back(text_of(e.get<std::string>()));
        else if (e.is_array())
          out.push_back(ids_of(e));
        else
          bad("'prompt' must be a string, a list of token ids, or a list of either", "prompt");
      }
    } else {
      bad("'prompt' must be a non-empty string, a list of token ids, or a list of either",
          "prompt");
    }
    if (out.size() > 64) bad("at most 64 prompts per request", "prompt");
    for (auto& ids : out)
      if (ids.empty()) bad("a prompt is empty (no tokens)", "prompt");
    return out;
  }

  std::vector<int32_t> chat_prompt(const json& j) const {
    const json* m = j.contains("messages") ? &j["messages"] : nullptr;
    if (!m || !m->is_array() || m->empty()) bad("'messages' must be a non-empty list", "messages");
    std::vector<ChatMessage> msgs;
    for (auto& e : *m) {
      if (!e.is_object())
        bad("each message must be an object with 'role' and 'content'", "messages");
      if (!e.contains("role") || !e["role"].is_string())
        bad("each message needs a string 'role'", "messages");
      const std::string role = e["role"];
      if (role != "system" && role != "user" && role != "assistant" && role != "developer")
        bad("unsupported message role '" + role + "' (system, user, assistant)", "messages");
      std::string content;
      const json c = e.value("content", json());
      // Only an assistant turn may go without content (one that made tool calls).
      if (c.is_null() && role != "assistant")
        bad("a '" + role + "' message needs 'content'", "messages");
      if (c.is_string()) {
        content = c.get<std::string>();
      } else if (c.is_array()) {  // [{"type":"text","text":...}]
        for (auto& part : c) {
          if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
              !part["text"].is_string())
            bad("only text content parts are supported", "messages");
          content += part["text"].get<std::string>();
        }
      } else if (!c.is_null()) {
        bad("message 'content' must be a string or a list of text parts", "messages");
      }
      msgs.push_back({role == "developer" ? "system" : role, content});
    }
    const Tokenizer& tok = *model->tokenizer;
    const std::string bos =
        tok.bos_id() >= 0 ? std::string(tok.token_text(tok.bos_id())) : std::string();
    const std::string eos =
        tok.eos_id() >= 0 ? std::string(tok.token_text(tok.eos_id())) : std::string();
    return tok.encode(render_chat(chat_format, msgs, true, bos, eos), false, true);
  }

  EngineRequest sampling_request(const Fields& f, bool chat) const {
    EngineRequest r;
    SamplingParams& s = r.sampling;
    s.temperature = static_cast<float>(f.number("temperature", 1.0, 0.0, 100.0));
    s.top_p = static_cast<float>(f.number("top_p", 1.0, 1e-9, 1.0));
    s.top_k = static_cast<int32_t>(f.integer("top_k", -1, -1, 1 << 20));
    s.min_p = static_cast<float>(f.number("min_p", 0.0, 0.0, 1.0));
    s.presence_penalty = static_cast<float>(f.number("presence_penalty", 0.0, -2.0, 2.0));
    s.frequency_penalty = static_cast<float>(f.number("frequency_penalty", 0.0, -2.0, 2.0));
    s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 1.0, 1e-6, 100.0));
    if (f.get("seed")) s.seed = static_cast<uint64_t>(f.integer("seed", 0, INT64_MIN, INT64_MAX));
    if (const json* lb = f.get("logit_bias")) {
      // {"token id": bias}, as OpenAI: ids as strings, biases in [-100, 100].
      if (!lb->is_object())
        bad("'logit_bias' must be an object mapping token ids to biases", "logit_bias");
      if (lb->size() > 1024) bad("'logit_bias' may name at most 1024 tokens", "logit_bias");
      for (auto it = lb->begin(); it != lb->end(); ++it) {
        const std::string& key = it.key();
        int64_t id = -1;
        if (!key.empty() && key.size() <= 10 &&
            key.find_first_not_of("0123456789") == std::string::npos)
          id = std::stoll(key);
        if (id < 0 || id >= model->config.vocab_size)
          bad("'logit_bias' key '" + key + "' is not a token id of this model (0.." +
                  std::to_string(model->config.vocab_size - 1) + ")",
              "logit_bias");
        if (!it.value().is_number()) bad("'logit_bias' values must be numbers", "logit_bias");
        const double b = it.value().get<double>();
        if (!(b >= -100.0 && b <= 100.0))
          bad("'logit_bias' values must be between -100 and 100", "logit_bias");
        s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
      }
    }
    const int32_t ctx = scheduler->max_model_len();
    int64_t max_tokens = -1;
    max_tokens =
        f.integer("max_tokens", chat ? -1 : 16, 1, ctx);  // checked even when overridden below
    if (chat && f.get("max_completion_tokens"))
      max_tokens = f.integer("max_completion_tokens", 16, 1, ctx);
    r.max_tokens = static_cast<int32_t>(max_tokens);  // -1: whatever the context leaves
    r.ignore_eos = f.boolean("ignore_eos", false);
    if (const json* st = f.get("stop")) {
      if (st->is_string())
        r.stop.push_back(st->get<std::string>());
      else if (st->is_array()) {
        if (st->size() > 16) bad("at most 16 stop strings", "stop");
        for (auto& x : *st) {
          if (!x.is_string()) bad("'stop' must be a string or a list of strings", "stop");
          r.stop.push_back(x.get<std::string>());
        }
      } else {
        bad("'stop' must be a string or a list of strings", "stop");
      }
    }
    f.string("user");  // type-checked, otherwise unused
    return r;
  }

  void generate(const HttpRequest& http, std::shared_ptr<Responder> out, Job::Kind kind) {
    authorize(http);
    const json j = parse_body(http);
    require_ready();
    const Fields f(j);
    check_model(f);
    const bool chat = kind == Job::Kind::Chat;
    EngineRequest base = sampling_request(f, chat);
    const int n = static_cast<int>(f.integer("n", 1, 1, opt.max_n));
    const bool stream = f.boolean("stream", false);
    // Features a client may rely on that this server does not have: refused, never ignored.
    if (!chat && f.boolean("echo", false)) bad("'echo' is not supported by this server", "echo");
    if (!chat && f.integer("best_of", 1, 1, opt.max_n) > 1)
      bad("'best_of' > 1 is not supported by this server; use 'n'", "best_of");
    if (!chat && f.get("suffix")) bad("'suffix' is not supported by this server", "suffix");
    if (chat) {
      if (const json* t = f.get("tools"); t && !(t->is_array() && t->empty()))
        bad("'tools' (function calling) is not supported by this server", "tools");
      if (const json* rf = f.get("response_format")) {
        if (!rf->is_object() || rf->value("type", std::string()) != "text")
          bad("only 'response_format' {\"type\": \"text\"} is supported by this server",
              "response_format");
      }
    }
    bool include_usage = false;
    if (const json* so = f.get("stream_options")) {
      if (!stream) bad("'stream_options' is only allowed when 'stream' is true", "stream_options");
      if (!so->is_object()) bad("'stream_options' must be an object", "stream_options");
      include_usage = Fields(*so).boolean("include_usage", false);
    }
    int32_t logprobs = -1;
    if (chat) {
      if (f.boolean("logprobs", false))
        logprobs = static_cast<int32_t>(f.integer("top_logprobs", 0, 0, 20));
      else if (f.get("top_logprobs"))
        bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    } else if (f.get("logprobs")) {
      logprobs = static_cast<int32_t>(f.integer("logprobs", 0, 0, 20));
    }
    std::vector<std::vector<int32_t>> ps =
        chat ? std::vector<std::vector<int32_t>>{chat_prompt(j)} : prompts(j);
    const int32_t ctx = scheduler->max_model_len();
    for (auto& p : ps) {
      const int64_t want = base.max_tokens < 0 ? 1 : base.max_tokens;
      if (static_cast<int64_t>(p.size()) + want > ctx)
        bad("This model's maximum context length is " + std::to_string(ctx) +
                " tokens. However, you requested " + std::to_string(p.size() + want) + " tokens (" +
                std::to_string(p.size()) + " in the messages, " + std::to_string(want) +
                " in the completion). Please reduce the length of the messages or completion.",
            chat ? "messages" : "prompt");
    }
    SamplingParams probe = base.sampling;
    try {
      probe.validate();
    } catch (const std::invalid_argument& e) {
      bad(e.what());
    }

    // The whole request is queued at once or not at all; one that could never be (more
    // sequences than the queue holds) is the client's error, not a reason to retry.
    const int64_t total = static_cast<int64_t>(ps.size()) * n;
    if (total > scheduler->max_waiting())
      bad("this request asks for " + std::to_string(total) + " sequences (" +
              std::to_string(ps.size()) + " prompt(s) x n=" + std::to_string(n) +
              ") but the server queues at most " + std::to_string(scheduler->max_waiting()) +
              "; send fewer prompts or a smaller 'n'",
          n > 1 ? "n" : "prompt");

    auto job = std::make_shared<Job>();
    job->kind = kind;
    job->id = random_id(chat ? "chatcmpl-" : "cmpl-");
    job->model = opt.served_model_name;
    job->created = unix_now();
    job->stream = stream;
    job->include_usage = include_usage;
    job->logprobs = logprobs;
    job->out = out;
    job->tok = model->tokenizer.get();
    job->scheduler = scheduler;
    job->active = &active;
    job->n_per_prompt = static_cast<size_t>(n);
    job->choices.resize(static_cast<size_t>(total));
    job->remaining = static_cast<int>(total);

    std::vector<EngineRequest> rs;
    // One deadline for all: they time out together, and the request fails once.
    const auto deadline = Clock::now() + std::chrono::seconds(opt.request_timeout_seconds);
    size_t idx = 0;
    for (auto& p : ps)
      for (int i = 0; i < n; ++i, ++idx) {
        EngineRequest r = base;
        r.prompt = p;
        if (r.max_tokens < 0) r.max_tokens = ctx - static_cast<int32_t>(p.size());
        if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
        r.logprobs = logprobs;
        r.deadline = deadline;
        r.on_output = [job, idx](const RequestOutput& o) { job->on_output(idx, o); };
        rs.push_back(std::move(r));
      }
    std::weak_ptr<Job> weak = job;
    out->on_disconnect([weak, this] {
      if (auto jb = weak.lock()) {
        std::vector<uint64_t> ids;
        {
          std::lock_guard<std::mutex> lock(jb->mu);
          jb->gone = true;
          ids = jb->ids;
        }
        for (auto id : ids) scheduler->cancel(id);
      }
    });
    ++active;
    std::vector<uint64_t> ids;
    try {
      ids = scheduler->submit(std::move(rs));
    } catch (const QueueFull& e) {
      --active;
      ++rejected;
      if (shutting_down) throw ApiError{503, e.what(), "server_error", {}, {}};
      throw ApiError{429, e.what(), "rate_limit_error", {}, {}};
    } catch (const std::invalid_argument& e) {
      --active;
      bad(e.what());
    } catch (...) {
      --active;
      throw;
    }
    std::vector<uint64_t> to_cancel;
    {
      std::lock_guard<std::mutex> lock(job->mu);
      job->ids = ids;
      // The client left, or a sequence failed, while they were being queued.
      if (job->gone || job->failure)
        for (size_t i = 0; i < ids.size(); ++i)
          if (!job->choices[i].done) to_cancel.push_back(ids[i]);
    }
    for (auto id : to_cancel) scheduler->cancel(id);
    // Only now, with every sequence queued, can a stream commit to 200.
    if (stream) job->start();
  }

  void tokenize(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = parse_body(http);
    require_ready();
    const Fields f(j);
    check_model(f);
    std::vector<int32_t> ids;
    if (j.contains("messages")) {
      ids = chat_prompt(j);
    } else {
      auto p = f.string("prompt");
      if (!p) bad("'prompt' (a string) or 'messages' is required", "prompt");
      ids = model->tokenizer->encode(
          *p, f.boolean("add_special_tokens", true) && model->tokenizer->add_bos_default());
    }
    out->reply(json_response(
        {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", scheduler->max_model_len()}}));
  }

  void detokenize(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = parse_body(http);
    require_ready();
    const Fields f(j);
    check_model(f);
    const json* t = f.get("tokens");
    if (!t || !t->is_array()) bad("'tokens' must be a list of token ids", "tokens");
    std::vector<int32_t> ids;
    for (auto& v : *t) {
      if (!v.is_number_integer()) bad("'tokens' must be a list of integers", "tokens");
      const auto id = as_int64(v);
      if (!id || *id < 0 || *id >= model->tokenizer->vocab_size())
        bad("token id " + v.dump() + " is outside the vocabulary", "tokens");
      ids.push_back(static_cast<int32_t>(*id));
    }
    out->reply(json_response({{"prompt", model->tokenizer->decode(ids)}}));
  }

  json models_list() const {
    json data = json::array();
    if (ready)
      data.push_back({{"id", opt.served_model_name},
                      {"object", "model"},
                      {"created", unix_now()},
                      {"owned_by", "sandwich"},
                      {"root", model->source},
                      {"max_model_len", scheduler->max_model_len()}});
    return {{"object", "list"}, {"data", data}};
  }
};

OpenAiService::OpenAiService(ServiceOptions options) : impl_(new Impl) {
  impl_->opt = std::move(options);
}
OpenAiService::~OpenAiService() = default;

void OpenAiService::attach(const Model& model, Scheduler& scheduler) {
  Impl& I = *impl_;
  I.model = &model;
  I.scheduler = &scheduler;
  const Tokenizer& tok = *model.tokenizer;
  std::optional<ChatFormat> fmt;
  if (I.opt.chat_template) {
    const std::string& t = *I.opt.chat_template;
    if (t == "llama3")
      fmt = ChatFormat::Llama3;
    else if (t == "llama2")
      fmt = ChatFormat::Llama2;
    else if (t == "chatml")
      fmt = ChatFormat::ChatML;
    else {
      std::ifstream in(t);
      if (!in)
        throw std::runtime_error("--chat-template '" + t +
                                 "' is neither llama3, llama2, chatml nor a readable file");
      std::stringstream ss;
      ss << in.rdbuf();
      fmt = detect_chat_format(ss.str());
      if (!fmt)
        throw std::runtime_error("--chat-template " + t +
                                 ": not a Llama-3, Llama-2 or ChatML template");
    }
  } else if (!tok.chat_template().empty()) {
    fmt = detect_chat_format(tok.chat_template());
  }
  if (!fmt) {
    // No template in the model: go by its special tokens.
    if (tok.token_id("<|start_header_id|>") >= 0)
      fmt = ChatFormat::Llama3;
    else if (tok.token_id("<|im_start|>") >= 0)
      fmt = ChatFormat::ChatML;
    else
      fmt = ChatFormat::Llama2;
  }
  I.chat_format = *fmt;
  I.ready = true;
}

void OpenAiService::begin_shutdown() {
  impl_->shutting_down = true;
}
int OpenAiService::active_requests() const {
  return impl_->active.load();
}

namespace {
// The method each route takes (every route takes one).
const char* route_method(const std::string& path) {
  static const std::pair<const char*, const char*> routes[] = {
      {"/health", "GET"},    {"/metrics", "GET"},         {"/version", "GET"},
      {"/v1/models", "GET"}, {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"},
      {"/tokenize", "POST"}, {"/detokenize", "POST"}};
  for (auto& [p, m] : routes)
    if (path == p) return m;
  return nullptr;
}
}  // namespace

std::optional<HttpResponse> OpenAiService::check_headers(const HttpRequest& req) const {
  try {
    if (Impl::needs_key(req.path)) impl_->authorize(req);
  } catch (const ApiError& e) {
    return to_response(e);
  }
  return std::nullopt;
}

void OpenAiService::handle(const HttpRequest& req, std::shared_ptr<Responder> out) {
  Impl& I = *impl_;
  ++I.http_requests;
  try {
    const std::string& p = req.path;
    const char* method = route_method(p);
    if (!method) throw ApiError{404, "no route " + req.method + " " + p, "not_found_error", {}, {}};
    if (req.method != method)
      throw ApiError{405,
                     "method " + req.method + " is not allowed on " + p + " (use " + method + ")",
                     "invalid_request_error",
                     {},
                     {},
                     {{"Allow", method}}};
    if (p == "/health") {
      HttpResponse r;
      r.status = I.ready && !I.shutting_down ? 200 : 503;
      r.body = I.ready ? (I.shutting_down ? R"({"status":"shutting down"})" : "{}")
                       : R"({"status":"loading"})";
      return out->reply(r);
    }
    if (p == "/metrics") {
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4";
      r.body = metrics_text();
      return out->reply(r);
    }
    if (p == "/version") return out->reply(json_response({{"version", "0.1.0"}}));
    if (Impl::needs_key(p)) I.authorize(req);
    if (p == "/v1/models") return out->reply(json_response(I.models_list()));
    if (p == "/v1/completions") return I.generate(req, out, Job::Kind::Completion);
    if (p == "/v1/chat/completions") return I.generate(req, out, Job::Kind::Chat);
    if (p == "/tokenize") return I.tokenize(req, out);
    return I.detokenize(req, out);
  } catch (const ApiError& e) {
    out->reply(to_response(e));
  } catch (const std::exception& e) {
    out->reply(json_error(500, std::string("internal error: ") + e.what(), "server_error"));
  }
}

std::string OpenAiService::metrics_text() const {
  const Impl& I = *impl_;
  MetricsSnapshot m;
  m.model_ready = I.ready;
  if (I.scheduler)
    m.engine = MetricsSnapshot::Engine{
        I.scheduler->stats(), I.rejected.load(), I.scheduler->ttft().snapshot(),
        I.scheduler->inter_token().snapshot(), I.scheduler->e2e().snapshot()};
  return server::metrics_text(m);
}

}  // namespace sandwich::server
