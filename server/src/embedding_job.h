#pragma once
// One /v1/embeddings request while the engine works on it: its inputs queued together (each an
// embedding sequence of the scheduler, batched with everything else), and the answer in OpenAI's
// shape once all of them are pooled. It fails as a whole, and is cancelled when the client leaves.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "engine/runtime/scheduler.h"
#include "request_parsing.h"
#include "server/http_server.h"

namespace sandwich::server {

struct EmbeddingEnv {
  engine::Scheduler& scheduler;
  std::atomic<int>& active;  // requests still running; counts this one until it ends
  engine::Pooling pooling;
};

// Queues every input (all or none) and answers through `out`. Throws what Scheduler::submit
// throws (QueueFull, std::invalid_argument); nothing is queued and nothing answered then.
void run_embeddings(const EmbeddingRequest& req, std::string id, std::string model,
                    std::chrono::seconds timeout, const EmbeddingEnv& env,
                    std::shared_ptr<Responder> out);

}  // namespace sandwich::server
