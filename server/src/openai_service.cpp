#include "server/openai_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <random>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "json_response.h"
#include "prometheus.h"
#include "request_fields.h"
#include "request_parsing.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

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
  ApiKind kind = ApiKind::Completion;
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
      if (kind == ApiKind::Chat) {
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
            if (kind == ApiKind::Chat) {
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
              chunk += "data: " + dump_json(u) + "\n\n";
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

  const char* chunk_object() const {
    return kind == ApiKind::Chat ? "chat.completion.chunk" : "text_completion";
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
    if (kind == ApiKind::Chat) {
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
    return "data: " + dump_json(j) + "\n\n";
  }

  void finish_whole() {
    json cs = json::array();
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < choices.size(); ++i) {
      Choice& c = choices[i];
      json choice = {{"index", i}, {"finish_reason", c.finish_reason}};
      if (kind == ApiKind::Chat) {
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
              {"object", kind == ApiKind::Chat ? "chat.completion" : "text_completion"},
              {"created", created},
              {"model", model},
              {"choices", cs},
              {"usage", usage()}};
    out->reply(json_response(j));
  }
};

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

  void require_ready() const {
    if (shutting_down) throw ApiError{503, "the server is shutting down", "server_error", {}, {}};
    if (!ready) throw ApiError{503, "the model is still loading", "server_error", {}, {}};
  }

  // The body of a model route, once the server can answer it.
  json model_request(const HttpRequest& http) const {
    json j = parse_json_body(http.body);
    require_ready();
    check_model(Fields(j), opt.served_model_name);
    return j;
  }

  ParseContext parse_context() const {
    return {*model->tokenizer,        chat_format,
            model->config.vocab_size, scheduler->max_model_len(),
            scheduler->max_waiting(), opt.max_n};
  }

  void generate(const HttpRequest& http, std::shared_ptr<Responder> out, ApiKind kind) {
    authorize(http);
    const json j = model_request(http);
    const GenerateRequest req = parse_generate_request(j, kind, parse_context());
    const bool chat = kind == ApiKind::Chat;
    const int n = req.n;
    const bool stream = req.stream;
    const int64_t total = static_cast<int64_t>(req.sequences());
    const int32_t ctx = scheduler->max_model_len();
    EngineRequest base;
    base.sampling = req.sampling;
    base.max_tokens = req.max_tokens;
    base.stop = req.stop;
    base.ignore_eos = req.ignore_eos;
    const int32_t logprobs = req.logprobs;
    const auto& ps = req.prompts;

    auto job = std::make_shared<Job>();
    job->kind = kind;
    job->id = random_id(chat ? "chatcmpl-" : "cmpl-");
    job->model = opt.served_model_name;
    job->created = unix_now();
    job->stream = stream;
    job->include_usage = req.include_usage;
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
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(opt.request_timeout_seconds);
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
    const json j = model_request(http);
    const std::vector<int32_t> ids = parse_tokenize_request(j, parse_context());
    out->reply(json_response(
        {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", scheduler->max_model_len()}}));
  }

  void detokenize(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = model_request(http);
    const std::vector<int32_t> ids = parse_detokenize_request(j, *model->tokenizer);
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
  I.chat_format = choose_chat_format(I.opt.chat_template, *model.tokenizer);
  I.ready = true;
}

void OpenAiService::begin_shutdown() {
  impl_->shutting_down = true;
}
int OpenAiService::active_requests() const {
  return impl_->active.load();
}

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
    if (p == "/v1/completions") return I.generate(req, out, ApiKind::Completion);
    if (p == "/v1/chat/completions") return I.generate(req, out, ApiKind::Chat);
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
