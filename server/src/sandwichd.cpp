#include "server/sandwichd.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <utility>

#include "common/log.h"
#include "common/stop_signal.h"
#include "engine/runtime/executor.h"
#include "request_log.h"

namespace sandwich::server {

Sandwichd::Sandwichd(SandwichdOptions options, StartupPlanSearch search)
    : o_(std::move(options)), search_(std::move(search)) {}

Sandwichd::~Sandwichd() {
  // No request may reach the scheduler while it goes (a Sandwichd left without serve()).
  if (service_) service_->stop_preprocessing();
  if (server_) server_->stop();
}

int Sandwichd::run() {
  pipeline_ = engine::Pipeline::join(o_.pipeline);
  if (pipeline_)
    o_.load.choose_layers = [this](const engine::ModelConfig& c) { return pipeline_->layers(c); };
  if (pipeline_ && !pipeline_->head()) return run_worker();
  start();
  return serve();
}

// A worker node: its layers and its own configurations, no HTTP.
int Sandwichd::run_worker() {
  set_stop_phase("reading the plan");
  configs_ = engine::resolve_plan(o_.plan);
  o_.load.threads = o_.plan.threads;
  set_stop_phase("loading the model");
  model_ = engine::load_model(o_.load);
  choose_default_plan();
  const engine::AppliedPlan applied =
      engine::apply_plan(configs_, *model_, o_.load.model, "sandwichd", std::cerr);
  logf(LogLevel::Info, "sandwichd", "%s: %s", pipeline_->node_name(pipeline_->node()).c_str(),
       applied.line.c_str());
  set_stop_phase("serving as a pipeline worker");
  return pipeline_->serve(*model_, {configs_.plan.prefill, configs_.plan.decode});
}

void Sandwichd::start() {
  // The plan is refused before anything binds.
  set_stop_phase("reading the plan");
  configs_ = engine::resolve_plan(o_.plan);
  o_.scheduler.batch_invariant = o_.plan.batch_invariant;
  o_.scheduler.ablation = o_.plan.ablation;
  o_.load.threads = o_.plan.threads;
  start_http();
  logf(LogLevel::Info, "sandwichd", "loading %s", o_.load.model.c_str());
  set_stop_phase("loading the model");
  try {
    load_engine();
  } catch (...) {
    server_->stop();
    throw;
  }
  logf(LogLevel::Info, "sandwichd", "listening on http://%s:%u", o_.http.host.c_str(),
       server_->port());
  const engine::SchedulerOptions& sched = o_.scheduler;
  logf(LogLevel::Info, "sandwichd",
       "ready: %s, weights %s loaded in %.1f s, max model len %d, "
       "prefill %s, decode %s; %s",
       model_->source.c_str(), model_->weight_types.c_str(), model_->load_seconds,
       scheduler_->max_model_len(), sched.prefill_config->to_string().c_str(),
       sched.decode_config.value_or(*sched.prefill_config).to_string().c_str(),
       engine::describe_switches(o_.plan).c_str());
  serving_ = true;
}

uint16_t Sandwichd::port() const {
  return server_->port();
}

void Sandwichd::request_stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_requested_ = true;
  cv_.notify_all();
}

void Sandwichd::start_http() {
  o_.http.reserved_paths = {"/health", "/metrics"};
  o_.http.on_exchange = log_http_exchange;
  service_ = std::make_unique<OpenAiService>(o_.service);
  OpenAiService& service = *service_;
  server_ = std::make_unique<HttpServer>(
      o_.http,
      [&service](HttpRequest& r, std::shared_ptr<Responder> out) {
        service.handle(r, std::move(out));
      },
      [&service](const HttpRequest& r) { return service.check_headers(r); });
  HttpServer& server = *server_;
  service.report_http_stats([&server] { return server.stats(); });
  // The server's signal handler replaces stop_on_signal's: until serving there is nothing to
  // drain, and a load may take minutes (or wait forever on a FIFO), so the signal stops it now.
  server.on_signal([this](int sig) {
    if (!serving_) stop_by_signal(sig);
    // mpirun ends a job whose node died with SIGTERM: a step waiting for a node will not end.
    if (pipeline_) {
      const std::string late = pipeline_->waiting_for();
      if (!late.empty()) {
        logf(LogLevel::Error, "sandwichd", "stopped by a signal while %s; the MPI job is ending",
             late.c_str());
        std::_Exit(128 + sig);
      }
    }
    request_stop();
  });
  server.start();
}

void Sandwichd::load_engine() {
  model_ = engine::load_model(o_.load);
  for (const auto& n : model_->notes) logf(LogLevel::Warning, "sandwichd", "note: %s", n.c_str());
  choose_default_plan();
  // Before the scheduler makes its executors: rank processes inherit the installed table.
  const engine::AppliedPlan applied =
      engine::apply_plan(configs_, *model_, o_.load.model, "sandwichd", std::cerr);
  logf(LogLevel::Info, "sandwichd", "%s", applied.line.c_str());
  o_.scheduler.prefill_config = configs_.plan.prefill;
  o_.scheduler.decode_config = configs_.plan.decode;
  if (pipeline_) {
    pipeline_->set_head_options(*model_, {configs_.plan.prefill, configs_.plan.decode});
    o_.scheduler.executor_factory = pipeline_->executor_factory();
  }
  scheduler_ = std::make_unique<engine::Scheduler>(*model_, o_.scheduler);
  if (pipeline_)
    for (const std::string& line : pipeline_->node_lines())
      logf(LogLevel::Info, "sandwichd", "pipeline %s", line.c_str());
  logf(LogLevel::Info, "sandwichd", "KV cache: %s", scheduler_->kv_cache().describe().c_str());
  service_->attach(*model_, *scheduler_);
  logf(LogLevel::Info, "sandwichd", "chat template: %s", service_->chat_template_note().c_str());
  logf(LogLevel::Info, "sandwichd", "tool calls: %s", service_->tool_call_note().c_str());
}

// No plan, configuration or thread count: the start-up search's choice for this machine.
void Sandwichd::choose_default_plan() {
  if (!search_ || o_.plan.threads_given || !(configs_.prefill_default || configs_.decode_default))
    return;
  const engine::Plan chosen = search_(*model_, o_.scheduler.kv_cache_dtype, &configs_.chosen_by);
  if (configs_.prefill_default) configs_.plan.prefill = chosen.prefill;
  if (configs_.decode_default)
    configs_.plan.decode = configs_.same_config ? configs_.plan.prefill : chosen.decode;
}

int Sandwichd::serve() {
  std::string fatal;
  if (wait_for_stop(fatal)) return stop_after_fatal(fatal);
  return drain();
}

// Until a signal, or until a rank group that lost a rank cannot be re-formed (true, with its
// message in `fatal`).
bool Sandwichd::wait_for_stop(std::string& fatal) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_requested_; })) {
    const engine::ExecutorHealth h = scheduler_->executor_health();
    if (h.failed) {
      fatal = h.message;
      return true;
    }
  }
  return false;
}

int Sandwichd::stop_after_fatal(const std::string& fatal) {
  logf(LogLevel::Error, "sandwichd", "fatal: %s; exiting so that the server can be restarted",
       fatal.c_str());
  service_->begin_shutdown();
  service_->stop_preprocessing();
  server_->stop_accepting();
  scheduler_->shutdown(false);  // whatever is running or waiting gets its error
  for (int i = 0; i < 50 && service_->active_requests() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server_->stop();
  return 1;
}

int Sandwichd::drain() {
  logf(LogLevel::Info, "sandwichd", "shutting down: finishing %d running request(s)",
       service_->active_requests());
  // Still accepting while draining: /health says 503 "shutting down" rather than a refused
  // connection, and new requests get 503 too.
  service_->begin_shutdown();
  // A request whose template or tokenizer is still running finishes (and is served, if it got
  // as far as the queue); those still waiting for a worker get 503.
  service_->stop_preprocessing();
  engine::Scheduler& scheduler = *scheduler_;
  scheduler.request_shutdown(true);
  std::thread waiter([&] { scheduler.shutdown(true); });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(o_.shutdown_timeout_seconds);
  while (scheduler.stats().running + scheduler.stats().waiting > 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  scheduler.request_shutdown(false);  // whatever is left is aborted
  waiter.join();
  // Let the last responses reach their clients.
  for (int i = 0; i < 100 && service_->active_requests() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server_->stop_accepting();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server_->stop();
  logf(LogLevel::Info, "sandwichd", "stopped");
  return 0;
}

}  // namespace sandwich::server
