#pragma once
// One completion request while the engine works on it: its sequences queued together, their
// output passed on (streamed, or gathered into one response), the request failing as a whole,
// and its sequences cancelled when the client leaves.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer.h"
#include "request_parsing.h"
#include "server/http_server.h"
#include "wire_format.h"

namespace sandwich::server {

struct CompletionEnv {
  const engine::Tokenizer& tokenizer;
  engine::Scheduler& scheduler;
  std::atomic<int>& active;  // requests still producing output; counts this one until it ends
  // The vocabulary's special-token texts but the tool-call markers (special_token_texts): dropped
  // from the content of requests whose tool calls are parsed (they are decoded keeping them).
  const std::vector<std::string>* special_texts = nullptr;
};

// The answer to a request that ended in an abort other than a cancel.
HttpResponse abort_error(const engine::RequestOutput& o);

// Queues every sequence of `req` (all or none) and answers through `out` as the engine works.
// Throws what Scheduler::submit throws (QueueFull, std::invalid_argument); nothing is queued and
// nothing answered then.
void run_completion(const GenerateRequest& req, const WireFormat& format, ResponseHeader header,
                    std::chrono::seconds timeout, const CompletionEnv& env,
                    std::shared_ptr<Responder> out);

}  // namespace sandwich::server
