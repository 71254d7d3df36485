// sandwichd: the OpenAI-compatible server. The HTTP side comes up first (so /health reports 503
// while the model loads); "listening on" is said once the model is loaded, so that a log never
// shows a listening server that then fails to load. SIGTERM/SIGINT drain: running requests may
// finish (up to --shutdown-timeout, then they are aborted) while /health and new requests get
// 503 "shutting down"; then it exits 0.
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/log.h"
#include "common/tool.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/scheduler.h"
#include "server/http_server.h"
#include "server/openai_service.h"
#include "tuner/default_plan.h"

using namespace sandwich;
using namespace sandwich::engine;

namespace {

size_t parse_bytes(const std::string& flag, const std::string& v) {
  size_t mult = 1;
  std::string num = v;
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return num.size() > n && num.compare(num.size() - n, n, s) == 0;
  };
  for (auto [suffix, m] : {std::pair{"GiB", size_t{1} << 30},
                           {"MiB", size_t{1} << 20},
                           {"KiB", size_t{1} << 10},
                           {"G", size_t{1} << 30},
                           {"M", size_t{1} << 20},
                           {"K", size_t{1} << 10}})
    if (ends(suffix)) {
      num.resize(num.size() - std::strlen(suffix));
      mult = m;
      break;
    }
  const double d = ArgParser::parse_double(flag, num);
  if (d <= 0) throw CliError(flag + " must be positive");
  return static_cast<size_t>(d * static_cast<double>(mult));
}

// vLLM's JSON list ('["http://a", "http://b"]') or a comma-separated list.
void add_allowed_origins(const std::string& v, std::vector<std::string>& out) {
  std::string list = v;
  if (!list.empty() && list.front() == '[') {
    if (list.back() != ']') throw CliError("--allowed-origins: a JSON list must end in ']'");
    list = list.substr(1, list.size() - 2);
  }
  std::stringstream ss(list);
  for (std::string o; std::getline(ss, o, ',');) {
    const size_t b = o.find_first_not_of(" \t\""), e = o.find_last_not_of(" \t\"");
    if (b == std::string::npos) continue;
    out.push_back(o.substr(b, e - b + 1));
  }
  if (out.empty()) throw CliError("--allowed-origins needs at least one origin");
}

}  // namespace

int main(int argc, char** argv) {
  return run_tool("sandwichd", [&]() -> int {
    LoadOptions load;
    server::HttpServerOptions http;
    server::ServiceOptions svc;
    SchedulerOptions sched;
    PlanOptions plan;
    int shutdown_timeout = 30;
    std::optional<std::string> served_name, api_key, chat_template;
    ArgParser p(
        "sandwichd [MODEL]",
        "OpenAI-compatible LLM server (continuous batching, separate prefill and decode plans).\n"
        "MODEL: the model, as --model takes it.");
    add_model_options(p, load);
    p.accept_positionals(1);
    p.add("--served-model-name", &served_name, "model id in the API (default: the --model value)",
          "NAME");
    p.add("--host", &http.host, "address to bind (default 127.0.0.1)", "H");
    p.option("--port", "P", "port (default 8000; 0 picks a free one)", [&](const std::string& v) {
      const int64_t port = ArgParser::parse_int("--port", v);
      if (port < 0 || port > 65535) throw CliError("--port must be 0..65535");
      http.port = static_cast<uint16_t>(port);
    });
    p.add("--api-key", &api_key,
          "require 'Authorization: Bearer KEY' on every route but /health and /metrics", "KEY");
    p.add_flag("--metrics-need-key", &svc.metrics_need_key,
               "with --api-key: /metrics needs the key too");
    p.add("--chat-template", &chat_template,
          "llama3, llama2, chatml, or a Jinja template file (default: the model's own)", "T");
    p.add("-c,--ctx-size,--max-model-len", &sched.max_model_len,
          "prompt + output limit (default: the model's context)");
    p.add("--max-num-seqs", &sched.max_num_seqs, "running sequences at most (default 64)");
    p.add("--max-num-batched-tokens", &sched.max_batched_tokens,
          "prompt tokens per prefill step (default 512)");
    p.option(
        "--kv-cache-memory", "BYTES",
        "KV-cache size, e.g. 2GiB (default: max-num-seqs full sequences, at most 4 GiB)",
        [&](const std::string& v) { sched.kv_cache_bytes = parse_bytes("--kv-cache-memory", v); });
    add_kv_cache_dtype_option(p, sched.kv_cache_dtype);
    p.flag("--no-prefix-caching", "do not reuse the KV blocks of prompts' shared prefixes",
           [&] { sched.enable_prefix_caching = false; });
    p.flag("--enable-prefix-caching", "reuse the KV blocks of shared prefixes (the default)",
           [&] { sched.enable_prefix_caching = true; });
    p.add("--max-waiting", &sched.max_waiting,
          "waiting-queue bound; beyond it requests get 429 (default 256)");
    add_plan_options(p, plan);
    p.add("--rank-step-timeout", &sched.rank_step_timeout_seconds,
          "seconds a step of a multi-rank plan may take before its ranks count as hung and are "
          "replaced (default 300)");
    p.add("--io-threads", &http.io_threads, "HTTP I/O threads (default 1)");
    p.option(
        "--max-body-bytes", "N", "request body limit (default 8 MiB)",
        [&](const std::string& v) { http.max_body_bytes = parse_bytes("--max-body-bytes", v); });
    p.add("--max-connections", &http.max_connections,
          "open connections at most (default 256); a few more are kept for /health and /metrics");
    p.add("--max-connections-per-client", &http.max_connections_per_client,
          "open connections one client address may hold (default: half of --max-connections; "
          "raise it behind a reverse proxy)");
    p.add("--header-timeout", &http.header_timeout_seconds,
          "seconds a request's whole head may take to arrive (default 10)", "S");
    p.add("--body-timeout", &http.body_timeout_seconds,
          "seconds a request's whole body may take after its head (default 30)", "S");
    p.add("--keep-alive-timeout", &http.keep_alive_timeout_seconds,
          "seconds an idle keep-alive connection stays open (default 5, as vLLM's)", "S");
    p.add("--write-timeout", &http.write_timeout_seconds,
          "seconds a write to a client may make no progress before its request is aborted "
          "(default 30)",
          "S");
    p.option("--max-send-buffer", "BYTES",
             "answer bytes one connection may have waiting to be written before its request is "
             "aborted (default 1MiB)",
             [&](const std::string& v) {
               http.max_send_buffer_bytes = parse_bytes("--max-send-buffer", v);
             });
    p.add("--request-timeout", &svc.request_timeout_seconds,
          "seconds a request may run (default 600)");
    p.add("--shutdown-timeout", &shutdown_timeout,
          "seconds running requests get to finish on SIGTERM (default 30)");
    p.repeatable("--allowed-origins", "ORIGINS",
                 "CORS: browser origins allowed to call the API, comma-separated or a JSON list "
                 "(e.g. http://localhost:3000, or * for any; default: none, CORS off)",
                 [&](const std::string& v) { add_allowed_origins(v, http.allowed_origins); });
    LogLevel log_level = LogLevel::Info;
    p.option(
        "--log-level", "L", "debug, info (default), warning or error", [&](const std::string& v) {
          const auto l = log_level_named(v);
          if (!l)
            throw CliError("--log-level must be debug, info, warning or error, got '" + v + "'");
          log_level = *l;
        });
    p.add("--log-interval", &svc.log_interval_seconds,
          "seconds between the engine's throughput lines in the log, while it works (default 10; "
          "0: none)",
          "S");
    if (!p.parse(argc, argv)) return 0;
    set_log_level(log_level);
    if (!p.positional().empty()) {
      if (!load.model.empty())
        throw CliError("the model is given twice: '" + p.positional()[0] + "' and --model '" +
                       load.model + "'");
      load.model = p.positional()[0];
    }
    if (load.model.empty()) throw CliError("--model is required (see --help)");
    if (!(svc.log_interval_seconds >= 0)) throw CliError("--log-interval must not be negative");
    if (sched.max_num_seqs < 1 || sched.max_batched_tokens < 1 || sched.max_waiting < 0 ||
        http.io_threads < 1 || http.max_connections < 1 || http.max_connections_per_client < 0 ||
        svc.request_timeout_seconds < 1 || shutdown_timeout < 0 ||
        !(sched.rank_step_timeout_seconds > 0) || !(http.header_timeout_seconds > 0) ||
        !(http.body_timeout_seconds > 0) || !(http.keep_alive_timeout_seconds > 0) ||
        !(http.write_timeout_seconds > 0))
      throw CliError("thread counts, limits and timeouts must be positive");
    if (svc.metrics_need_key && !api_key) throw CliError("--metrics-need-key needs --api-key");
    ResolvedPlan configs = resolve_plan(plan);
    sched.batch_invariant = plan.batch_invariant;
    load.threads = plan.threads;
    svc.served_model_name = served_name.value_or(load.model);
    svc.api_key = api_key;
    svc.chat_template = chat_template;

    http.reserved_paths = {"/health", "/metrics"};
    server::OpenAiService service(svc);
    server::HttpServer server(
        http,
        [&service](const server::HttpRequest& r, std::shared_ptr<server::Responder> out) {
          service.handle(r, std::move(out));
        },
        [&service](const server::HttpRequest& r) { return service.check_headers(r); });
    service.report_http_stats([&server] { return server.stats(); });
    std::mutex mu;
    std::condition_variable cv;
    bool stop_requested = false;
    server.on_signal([&](int) {
      std::lock_guard<std::mutex> lock(mu);
      stop_requested = true;
      cv.notify_all();
    });
    server.start();
    logf(LogLevel::Info, "sandwichd", "loading %s", load.model.c_str());

    std::unique_ptr<Model> model;
    std::unique_ptr<Scheduler> scheduler;
    try {
      model = load_model(load);
      for (const auto& n : model->notes)
        logf(LogLevel::Warning, "sandwichd", "note: %s", n.c_str());
      // No plan, configuration or thread count: the simulator's choice for this machine.
      if (!plan.threads_given && (configs.prefill_default || configs.decode_default)) {
        // Only rank counts the weights split over (a quantized model's whole blocks).
        const auto ranks_fit = [&](int ranks) { return rank_count_fits(*model, ranks); };
        const Plan chosen =
            tuner::default_plan(model->config, model->weight_dtype(), &configs.chosen_by,
                                sched.kv_cache_dtype, model->bytes_per_weight, ranks_fit);
        if (configs.prefill_default) configs.plan.prefill = chosen.prefill;
        if (configs.decode_default) configs.plan.decode = chosen.decode;
      }
      // Before the scheduler makes its executors: rank processes inherit the installed table.
      const AppliedPlan applied = apply_plan(configs, *model, load.model, "sandwichd", std::cerr);
      logf(LogLevel::Info, "sandwichd", "%s", applied.line.c_str());
      sched.prefill_config = configs.plan.prefill;
      sched.decode_config = configs.plan.decode;
      scheduler = std::make_unique<Scheduler>(*model, sched);
      logf(LogLevel::Info, "sandwichd", "KV cache: %s", scheduler->kv_cache().describe().c_str());
      service.attach(*model, *scheduler);
      logf(LogLevel::Info, "sandwichd", "chat template: %s", service.chat_template_note().c_str());
    } catch (...) {
      server.stop();
      throw;
    }
    logf(LogLevel::Info, "sandwichd", "listening on http://%s:%u", http.host.c_str(),
         server.port());
    logf(LogLevel::Info, "sandwichd",
         "ready: %s, weights %s loaded in %.1f s, max model len %d, "
         "prefill %s, decode %s",
         model->source.c_str(), model->weight_types.c_str(), model->load_seconds,
         scheduler->max_model_len(), sched.prefill_config->to_string().c_str(),
         sched.decode_config.value_or(*sched.prefill_config).to_string().c_str());

    // Serve until a signal, or until a rank group that lost a rank cannot be re-formed: then exit
    // non-zero so that a supervisor restarts the server.
    std::string fatal;
    {
      std::unique_lock<std::mutex> lock(mu);
      while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_requested; })) {
        const ExecutorHealth h = scheduler->executor_health();
        if (h.failed) {
          fatal = h.message;
          break;
        }
      }
    }
    if (!fatal.empty()) {
      logf(LogLevel::Error, "sandwichd", "fatal: %s; exiting so that the server can be restarted",
           fatal.c_str());
      service.begin_shutdown();
      server.stop_accepting();
      scheduler->shutdown(false);  // whatever is running or waiting gets its error
      for (int i = 0; i < 50 && service.active_requests() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      server.stop();
      return 1;
    }
    logf(LogLevel::Info, "sandwichd", "shutting down: finishing %d running request(s)",
         service.active_requests());
    // Still accepting while draining: /health says 503 "shutting down" rather than a refused
    // connection, and new requests get 503 too.
    service.begin_shutdown();
    scheduler->request_shutdown(true);
    std::thread waiter([&] { scheduler->shutdown(true); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(shutdown_timeout);
    while (scheduler->stats().running + scheduler->stats().waiting > 0 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    scheduler->request_shutdown(false);  // whatever is left is aborted
    waiter.join();
    // Let the last responses reach their clients.
    for (int i = 0; i < 100 && service.active_requests() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    server.stop_accepting();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
    logf(LogLevel::Info, "sandwichd", "stopped");
    return 0;
  });
}
