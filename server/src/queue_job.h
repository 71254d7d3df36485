#pragma once
// What every request of the engine does to start: its sequences queued all at once, the request
// counted as active while they run, and cancelled when the client goes away.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/http_server.h"

namespace sandwich::server {

// Job has disconnected() and queued(ids). Throws what Scheduler::submit throws; nothing is
// queued then, and `active` is as it was.
template <class Job>
void queue_job(const std::shared_ptr<Job>& job, std::vector<engine::EngineRequest> rs,
               engine::Scheduler& scheduler, std::atomic<int>& active, Responder& out) {
  std::weak_ptr<Job> weak = job;
  out.on_disconnect([weak] {
    if (auto j = weak.lock()) j->disconnected();
  });
  ++active;
  std::vector<uint64_t> ids;
  try {
    ids = scheduler.submit(std::move(rs));
  } catch (...) {
    --active;
    throw;
  }
  job->queued(std::move(ids));
}

}  // namespace sandwich::server
