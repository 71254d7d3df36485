#pragma once
// sandwichd's lifecycle. The HTTP side comes up first (so /health reports 503 while the model
// loads); "listening on" is said once the model is loaded, so that a log never shows a listening
// server that then fails to load. SIGTERM/SIGINT (or request_stop) drain: running requests may
// finish (up to the shutdown timeout, then they are aborted) while /health and new requests get
// 503 "shutting down".
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "engine/formats/model.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plans/plan.h"
#include "engine/plans/plan_check.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/scheduler.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace sandwich::server {

// What sandwichd's command line says, checked.
struct SandwichdOptions {
  engine::LoadOptions load;
  HttpServerOptions http;
  ServiceOptions service;
  engine::SchedulerOptions scheduler;
  engine::PlanOptions plan;
  // Pipeline parallelism across nodes (under mpirun): node 0 serves, the others are workers.
  engine::PipelineOptions pipeline;
  int shutdown_timeout_seconds = 30;  // running requests' time to finish on SIGTERM
};

// The configurations to run when no plan, configuration or thread count is given: the program
// hands in the tuner's start-up search (server/ does not use the tuner). `how` gets how they
// were chosen, for the start-up log.
using StartupPlanSearch = std::function<engine::Plan(
    const engine::Model& model, engine::KVCacheDType kv_cache_dtype, std::string* how)>;

class Sandwichd {
 public:
  // An empty search leaves such a run at one rank of every core.
  Sandwichd(SandwichdOptions options, StartupPlanSearch search);
  ~Sandwichd();

  // start(), then serve(): the exit code. A pipeline's worker node runs its layers instead, until
  // the head ends the job.
  int run();
  // Binds, loads the model and makes the scheduler; "ready" once it returns. Throws for a bad
  // plan (before binding), an address in use, or a model that does not load.
  void start();
  uint16_t port() const;
  // Serves until a signal or request_stop(), then drains and stops: 0. A rank group that lost a
  // rank and cannot be re-formed ends it at once with 1, so that a supervisor restarts it.
  int serve();
  // What SIGTERM does: serve() drains and returns.
  void request_stop();

 private:
  void start_http();
  void load_engine();
  void choose_default_plan();
  bool wait_for_stop(std::string& fatal);
  int stop_after_fatal(const std::string& fatal);
  int drain();
  int run_worker();

  SandwichdOptions o_;
  // Ended last: the head ends the workers once its scheduler is gone.
  std::unique_ptr<engine::Pipeline> pipeline_;
  StartupPlanSearch search_;
  engine::ResolvedPlan configs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;
  // Set once start() has finished: a signal before it stops the program (stop_by_signal).
  std::atomic<bool> serving_{false};
  // Destroyed in reverse: the scheduler and the model before the server and the service.
  std::unique_ptr<OpenAiService> service_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<engine::Scheduler> scheduler_;
};

}  // namespace sandwich::server
