#include "server/openai_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <random>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "common/log.h"
#include "common/version.h"
#include "completion_job.h"
#include "embedding_job.h"
#include "grammar_cache.h"
#include "json_response.h"
#include "preprocess_pool.h"
#include "prometheus.h"
#include "request_fields.h"
#include "request_log.h"
#include "request_parsing.h"
#include "special_text_filter.h"
#include "tool_call_format.h"
#include "wire_format.h"

namespace sandwich::server {
namespace {

// Grammars kept compiled between requests, and each one's bound on states and masks (a mask is
// 16 KiB at a 128k vocabulary): 16 x 64 MiB at most.
constexpr size_t kCachedGrammars = 16;
constexpr size_t kGrammarCacheBytes = size_t{64} << 20;

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

// Time that depends on the key's length only, not on how much of it a guess got right.
bool constant_time_equal(std::string_view guess, std::string_view key) {
  unsigned diff = guess.size() != key.size();
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(i < guess.size() ? guess[i] : 0) ^
            static_cast<unsigned char>(key[i]);
  return diff == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

constexpr std::string_view kModelPrefix = "/v1/models/";

// The id in GET /v1/models/{id}: everything after the prefix, slashes included (served names
// such as "meta-llama/Llama-3-8B"), percent-decoded.
std::string model_id_of(std::string_view path) {
  const std::string_view raw = path.substr(kModelPrefix.size());
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  std::string id;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      id += raw[i];
      continue;
    }
    const int hi = i + 2 < raw.size() ? hex(raw[i + 1]) : -1;
    const int lo = hi >= 0 ? hex(raw[i + 2]) : -1;
    if (lo < 0) bad("the model id in the path has a '%' that is not followed by two hex digits");
    id += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return id;
}

// The method each route takes (every route takes one).
const char* route_method(const std::string& path) {
  if (path.starts_with(kModelPrefix)) return "GET";
  static const std::pair<const char*, const char*> routes[] = {{"/health", "GET"},
                                                               {"/metrics", "GET"},
                                                               {"/version", "GET"},
                                                               {"/props", "GET"},
                                                               {"/v1/models", "GET"},
                                                               {"/v1/completions", "POST"},
                                                               {"/v1/chat/completions", "POST"},
                                                               {"/v1/embeddings", "POST"},
                                                               {"/tokenize", "POST"},
                                                               {"/detokenize", "POST"}};
  for (auto& [p, m] : routes)
    if (path == p) return m;
  return nullptr;
}

}  // namespace

struct OpenAiService::Impl {
  ServiceOptions opt;
  const engine::Model* model = nullptr;
  engine::Scheduler* scheduler = nullptr;
  std::atomic<bool> ready{false}, shutting_down{false};
  std::atomic<int> active{0};
  std::optional<engine::ChatTemplate> chat_template;
  std::string chat_template_source;  // for /props
  std::string chat_template_note;
  ChosenToolCallFormat tool_format;
  // The special tokens' texts but the tool-call markers: see CompletionEnv::special_texts.
  std::vector<std::string> special_texts;
  std::atomic<uint64_t> http_requests{0}, rejected{0};
  std::function<HttpServerStats()> http_stats;
  std::unique_ptr<EngineStatsLogger> stats_log;  // while attached and not shutting down
  size_t longest_token_bytes = 0;                // the vocabulary's; for the context pre-check
  std::unique_ptr<PreprocessPool> pool;
  std::unique_ptr<GrammarCache> grammars;  // once attached

  // Checks the key of a request to `path`, before anything else about it: an unknown route or
  // a wrong method without the key is a 401 too, so that routes cannot be probed.
  void authorize(const HttpRequest& r) const {
    // Two credentials: which one counts would depend on the proxy in between.
    if (std::count(r.repeated_headers.begin(), r.repeated_headers.end(), "authorization"))
      bad("the request has more than one Authorization header");
    if (!opt.api_key || !needs_key(r.path)) return;
    // "<scheme> <token>", the scheme case-insensitive (RFC 9110 section 11.1).
    const std::string h = r.header("authorization");
    const size_t sp = h.find(' ');
    const size_t tok = sp == std::string::npos ? sp : h.find_first_not_of(' ', sp);
    const bool ok = tok != std::string::npos &&
                    iequals(std::string_view(h).substr(0, sp), "bearer") &&
                    constant_time_equal(std::string_view(h).substr(tok), *opt.api_key);
    if (!ok)
      throw ApiError{401,
                     "invalid or missing API key (send 'Authorization: Bearer <key>')",
                     "authentication_error",
                     {},
                     "invalid_api_key"};
  }

  // Every path, known or not, but the probes a load balancer or Prometheus make.
  bool needs_key(const std::string& path) const {
    return path != "/health" && (path != "/metrics" || opt.metrics_need_key);
  }

  void require_ready() const {
    if (shutting_down) throw ApiError{503, "the server is shutting down", "server_error", {}, {}};
    if (!ready) throw ApiError{503, "the model is still loading", "server_error", {}, {}};
  }

  // The body of a model route, once the server can answer it.
  json model_request(const HttpRequest& http) const {
    json j = parse_json_body(http.body);
    require_ready();
    return j;
  }

  // After a model route's parser: the fields it never read, logged once (as vLLM does), so that
  // a field this server does not know is never dropped without a word.
  static void log_unread(const Fields& f, const std::string& what) {
    const std::vector<std::string> names = f.unread();
    if (!names.empty() && log_enabled(LogLevel::Warning))
      log_line(LogLevel::Warning, "request", what + ": " + ignored_fields_message(names));
  }

  ParseContext parse_context() const {
    return {*model->tokenizer,          *chat_template,           model->config.vocab_size,
            scheduler->max_model_len(), scheduler->max_waiting(), opt.max_n,
            opt.max_prompt_bytes,       longest_token_bytes,      tool_format.format};
  }

  // Hands a model route to the preprocessing workers: its body, template and tokenizer never
  // run on an I/O thread. A full queue is refused at once (nothing was started for it).
  void preprocess(HttpRequest& http, std::shared_ptr<Responder> out) {
    auto task = [this, http = std::move(http), out] {
      // Gone while it waited: nobody would read the answer.
      if (out->disconnected()) return;
      answer(*out, [&] { model_route(http, out); });
    };
    if (pool->try_submit(std::move(task))) return;
    ++rejected;
    require_ready();  // draining: 503, as for every new request
    throw ApiError{429,
                   "the server is busy: " + std::to_string(pool->max_queued()) +
                       " requests are already waiting to be prepared; retry later",
                   "rate_limit_error",
                   {},
                   {},
                   {{"Retry-After", "1"}}};
  }

  void model_route(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const std::string& p = http.path;
    // Queued before the drain began: it gets the 503 every new request gets.
    require_ready();
    if (p == "/v1/completions") return generate(http, out, ApiKind::Completion);
    if (p == "/v1/chat/completions") return generate(http, out, ApiKind::Chat);
    if (p == "/v1/embeddings") return embeddings(http, out);
    if (p == "/tokenize") return tokenize(http, out);
    return detokenize(http, out);
  }

  // Runs f, turning what it throws into the answer.
  template <class F>
  static void answer(Responder& out, F&& f) {
    try {
      f();
    } catch (const ApiError& e) {
      out.reply(to_response(e));
    } catch (const std::exception& e) {
      out.reply(json_error(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  }

  // Runs queue (which submits to the scheduler), turning a full queue into a 429 (503 while
  // draining) and a request the scheduler refuses into a 400.
  template <class F>
  void queue_or_refuse(F&& queue) {
    try {
      queue();
    } catch (const engine::QueueFull& e) {
      ++rejected;
      if (shutting_down) throw ApiError{503, e.what(), "server_error", {}, {}};
      throw ApiError{429, e.what(), "rate_limit_error", {}, {}};
    } catch (const std::invalid_argument& e) {
      bad(e.what());
    }
  }

  void generate(const HttpRequest& http, std::shared_ptr<Responder> out, ApiKind kind) {
    const json j = model_request(http);
    Fields f(j);
    check_model(f, opt.served_model_name);
    GenerateRequest req = parse_generate_request(f, kind, parse_context());
    if (!req.grammar.empty()) {
      try {
        req.grammar_automaton = grammars->get(req.grammar);
      } catch (const engine::grammar::GrammarError& e) {
        bad("'" + req.grammar_param + "': " + e.what(), req.grammar_param);
      }
    }
    const WireFormat& format =
        kind == ApiKind::Chat ? chat_completions_format() : completions_format();
    ResponseHeader header{random_id(format.id_prefix()), unix_now(), opt.served_model_name};
    log_unread(f, header.id);
    queue_or_refuse([&] {
      run_completion(req, format, std::move(header),
                     std::chrono::seconds(opt.request_timeout_seconds),
                     {*model->tokenizer, *scheduler, active, &special_texts}, out);
    });
  }

  void embeddings(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = model_request(http);
    Fields f(j);
    check_model(f, opt.served_model_name);
    const EmbeddingRequest req = parse_embedding_request(f, parse_context(), model->config.dim);
    const std::string id = random_id("embd-");
    log_unread(f, id);
    queue_or_refuse([&] {
      run_embeddings(req, id, opt.served_model_name,
                     std::chrono::seconds(opt.request_timeout_seconds),
                     {*scheduler, active, opt.pooling}, out);
    });
  }

  // llama-server's GET /props: what a client may want to know before it asks anything.
  json props() const {
    require_ready();
    const engine::Tokenizer& tok = *model->tokenizer;
    auto token_text = [&](int32_t id) {
      return id >= 0 ? std::string(tok.token_text(id)) : std::string();
    };
    // The defaults a request gets for the fields it leaves out.
    const json params = {{"n_predict", -1},
                         {"seed", -1},
                         {"temperature", 1.0},
                         {"top_k", -1},
                         {"top_p", 1.0},
                         {"min_p", 0.0},
                         {"repeat_penalty", 1.0},
                         {"presence_penalty", 0.0},
                         {"frequency_penalty", 0.0},
                         {"n_probs", 0},
                         {"ignore_eos", false},
                         {"stream", false}};
    return {{"default_generation_settings",
             {{"n_ctx", scheduler->max_model_len()}, {"params", params}}},
            {"total_slots", scheduler->max_num_seqs()},
            {"model_alias", opt.served_model_name},
            {"model_path", model->source},
            {"modalities", {{"vision", false}, {"audio", false}}},
            {"chat_template", chat_template_source},
            {"bos_token", token_text(tok.bos_id())},
            {"eos_token", token_text(tok.eos_id())},
            {"embedding_pooling", engine::pooling_name(opt.pooling)},
            {"build_info", version_line("sandwichd")},
            {"is_sleeping", false}};
  }

  void tokenize(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = model_request(http);
    Fields f(j);
    check_model(f, opt.served_model_name);
    const std::vector<int32_t> ids = parse_tokenize_request(f, parse_context());
    log_unread(f, http.method + " " + http.path);
    out->reply(json_response(
        {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", scheduler->max_model_len()}}));
  }

  void detokenize(const HttpRequest& http, std::shared_ptr<Responder> out) {
    const json j = model_request(http);
    Fields f(j);
    check_model(f, opt.served_model_name);
    const std::vector<int32_t> ids = parse_detokenize_request(f, *model->tokenizer);
    log_unread(f, http.method + " " + http.path);
    out->reply(json_response({{"prompt", model->tokenizer->decode(ids)}}));
  }

  json served_model() const {
    return {{"id", opt.served_model_name}, {"object", "model"},
            {"created", unix_now()},       {"owned_by", "sandwich"},
            {"root", model->source},       {"max_model_len", scheduler->max_model_len()}};
  }

  json models_list() const {
    json data = json::array();
    if (ready) data.push_back(served_model());
    return {{"object", "list"}, {"data", data}};
  }

  // GET /v1/models/{id}. While loading the model is not listed, so it is not found either.
  json model_retrieve(const std::string& id) const {
    // While loading, "does not exist" would be wrong and final: 503 says to retry.
    require_ready();
    if (id != opt.served_model_name)
      throw ApiError{404,
                     "The model `" + id + "` does not exist.",
                     "invalid_request_error",
                     {},
                     "model_not_found"};
    return served_model();
  }
};

OpenAiService::OpenAiService(ServiceOptions options) : impl_(new Impl) {
  impl_->opt = std::move(options);
  const ServiceOptions& o = impl_->opt;
  impl_->pool = std::make_unique<PreprocessPool>(
      o.preprocess_threads > 0 ? o.preprocess_threads : default_preprocess_threads(),
      static_cast<size_t>(std::max(0, o.preprocess_queue)));
}
OpenAiService::~OpenAiService() {
  stop_preprocessing();
}

void OpenAiService::stop_preprocessing() {
  impl_->pool->stop();
}

void OpenAiService::attach(const engine::Model& model, engine::Scheduler& scheduler) {
  Impl& I = *impl_;
  I.model = &model;
  I.scheduler = &scheduler;
  const ChosenChatTemplate chosen = choose_chat_template(I.opt.chat_template, *model.tokenizer);
  I.chat_template.emplace(make_chat_template(chosen, *model.tokenizer));
  I.chat_template_source = chosen.source;
  I.chat_template_note = describe(chosen);
  I.tool_format = choose_tool_call_format(I.opt.tool_call_parser, chosen.source, *model.tokenizer);
  I.special_texts = special_token_texts(*model.tokenizer, tool_call_markers(I.tool_format.format));
  I.longest_token_bytes = longest_token_bytes(*model.tokenizer);
  I.grammars =
      std::make_unique<GrammarCache>(*model.tokenizer, kCachedGrammars, kGrammarCacheBytes);
  if (I.opt.log_interval_seconds > 0)
    I.stats_log = std::make_unique<EngineStatsLogger>(scheduler, I.opt.log_interval_seconds);
  I.ready = true;
}

const std::string& OpenAiService::chat_template_note() const {
  return impl_->chat_template_note;
}

const std::string& OpenAiService::tool_call_note() const {
  return impl_->tool_format.origin;
}

void OpenAiService::begin_shutdown() {
  impl_->shutting_down = true;
  // Before the scheduler goes away.
  if (impl_->stats_log) impl_->stats_log->stop();
}
int OpenAiService::active_requests() const {
  return impl_->active.load();
}

std::optional<HttpResponse> OpenAiService::check_headers(const HttpRequest& req) const {
  try {
    impl_->authorize(req);
  } catch (const ApiError& e) {
    return to_response(e);
  }
  return std::nullopt;
}

void OpenAiService::handle(HttpRequest& req, std::shared_ptr<Responder> out) {
  Impl& I = *impl_;
  ++I.http_requests;
  // Everything here is cheap: it runs on an I/O thread, which /health and every stream share.
  Impl::answer(*out, [&] {
    const std::string& p = req.path;
    I.authorize(req);
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
      if (r.status == 200) {
        // A rank died or hung: requests wait until its group is re-formed (or the server exits).
        const engine::ExecutorHealth h = I.scheduler->executor_health();
        if (h.restarting || h.failed)
          r = json_response(
              {{"status", h.failed ? "failed" : "restarting"}, {"message", h.message}}, 503);
      }
      return out->reply(r);
    }
    if (p == "/metrics") {
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4";
      r.body = metrics_text();
      return out->reply(r);
    }
    if (p == "/version") return out->reply(json_response({{"version", project_version()}}));
    if (p == "/props") return out->reply(json_response(I.props()));
    if (I.shutting_down) I.require_ready();  // draining: nothing new starts
    if (p == "/v1/models") return out->reply(json_response(I.models_list()));
    if (p.starts_with(kModelPrefix))
      return out->reply(json_response(I.model_retrieve(model_id_of(p))));
    I.preprocess(req, out);
  });
}

void OpenAiService::report_http_stats(std::function<HttpServerStats()> stats) {
  impl_->http_stats = std::move(stats);
}

std::string OpenAiService::metrics_text() const {
  const Impl& I = *impl_;
  MetricsSnapshot m;
  m.model_name = I.opt.served_model_name;
  m.model_ready = I.ready;
  m.process = read_process_stats();
  if (I.http_stats) m.http = I.http_stats();
  m.preprocess = MetricsSnapshot::Preprocess{I.pool->threads(), I.pool->busy(), I.pool->queued()};
  if (I.scheduler) {
    const engine::Scheduler& s = *I.scheduler;
    m.engine = MetricsSnapshot::Engine{s.stats(),
                                       I.rejected.load(),
                                       s.ttft().snapshot(),
                                       s.inter_token().snapshot(),
                                       s.e2e().snapshot(),
                                       s.queue_time().snapshot(),
                                       s.prefill_time().snapshot(),
                                       s.decode_time().snapshot(),
                                       s.prompt_length().snapshot(),
                                       s.generation_length().snapshot()};
  }
  return server::metrics_text(m);
}

}  // namespace sandwich::server
