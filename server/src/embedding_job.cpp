#include "embedding_job.h"

#include <bit>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "base64.h"
#include "common/log.h"
#include "completion_job.h"
#include "json_response.h"
#include "queue_job.h"
#include "request_log.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

// OpenAI's base64 embeddings: the float32 values' little-endian bytes.
std::string base64_floats(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    if constexpr (std::endian::native == std::endian::big) u = __builtin_bswap32(u);
    std::memcpy(bytes.data() + i * sizeof(float), &u, sizeof u);
  }
  return base64_encode(bytes);
}

class EmbeddingJob {
 public:
  EmbeddingJob(const EmbeddingRequest& req, std::string id, std::string model,
               const EmbeddingEnv& env, std::shared_ptr<Responder> out)
      : id_(std::move(id)),
        model_(std::move(model)),
        base64_(req.base64),
        scheduler_(env.scheduler),
        active_(env.active),
        out_(std::move(out)),
        results_(req.inputs.size()),
        remaining_(req.inputs.size()) {}

  // The engine's news of input `idx` (on the engine thread).
  void on_output(size_t idx, const engine::RequestOutput& o) {
    if (!o.finished) return;
    // Written out as each input finishes, outside the lock: the engine thread calls this, and one
    // answer of many inputs written at the end would hold up its next step.
    std::string entry;
    if (!o.embedding.empty())
      entry = dump_json(
          {{"object", "embedding"},
           {"index", idx},
           {"embedding", base64_ ? json(base64_floats(o.embedding)) : json(o.embedding)}});
    std::optional<HttpResponse> reply;
    std::vector<uint64_t> to_cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      prompt_tokens_ += o.prompt_tokens;
      if (o.finish_reason == engine::FinishReason::Abort) {
        if (o.abort_reason == engine::AbortReason::Cancelled) {
          cancelled_ = cancelled_ || !failure_;
        } else if (!failure_ && !cancelled_) {
          failure_ = abort_error(o);
          for (size_t i = 0; i < ids_.size(); ++i)
            if (!results_[i].done) to_cancel.push_back(ids_[i]);
        }
      }
      results_[idx].done = true;
      results_[idx].entry = std::move(entry);
      if (--remaining_ == 0) {
        --active_;
        reply = answer();
        log_finished(reply ? reply->status : 499);
      }
    }
    for (uint64_t id : to_cancel) scheduler_.cancel(id);
    if (reply) out_->reply(std::move(*reply));
  }

  void queued(std::vector<uint64_t> ids) {
    std::vector<uint64_t> to_cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ids_ = std::move(ids);
      if (gone_ || failure_)
        for (size_t i = 0; i < ids_.size(); ++i)
          if (!results_[i].done) to_cancel.push_back(ids_[i]);
    }
    for (uint64_t id : to_cancel) scheduler_.cancel(id);
  }

  void disconnected() {
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone_ = true;
      ids = ids_;
    }
    for (uint64_t id : ids) scheduler_.cancel(id);
  }

 private:
  struct Result {
    bool done = false;
    std::string entry;  // its object in "data", as JSON text
  };

  // Once every input is done: the error, nothing for a client gone, or the embeddings.
  std::optional<HttpResponse> answer() const {
    if (failure_) return failure_;
    if (cancelled_ || gone_) return std::nullopt;
    HttpResponse r;
    r.body = R"({"object":"list","data":[)";
    for (size_t i = 0; i < results_.size(); ++i) r.body += (i ? "," : "") + results_[i].entry;
    r.body += "],\"model\":" + dump_json(model_) + ",\"usage\":" +
              dump_json({{"prompt_tokens", prompt_tokens_}, {"total_tokens", prompt_tokens_}}) +
              "}";
    return r;
  }

  void log_finished(int status) const {
    if (!log_enabled(LogLevel::Info)) return;
    RequestRecord r;
    r.id = id_;
    r.status = status;
    r.prompt_tokens = prompt_tokens_;
    r.e2e_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    r.finish_reason = status == 200 ? "embedding" : "abort";
    log_line(LogLevel::Info, "request", request_log_message(r));
  }

  const std::string id_, model_;
  const bool base64_;
  engine::Scheduler& scheduler_;
  std::atomic<int>& active_;
  const std::shared_ptr<Responder> out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();

  std::mutex mu_;
  std::vector<Result> results_;
  std::vector<uint64_t> ids_;
  size_t remaining_;
  int64_t prompt_tokens_ = 0;
  bool gone_ = false, cancelled_ = false;
  // The first abort other than a cancel: the request fails as a whole once all inputs are gone.
  std::optional<HttpResponse> failure_;
};

}  // namespace

void run_embeddings(const EmbeddingRequest& req, std::string id, std::string model,
                    std::chrono::seconds timeout, const EmbeddingEnv& env,
                    std::shared_ptr<Responder> out) {
  auto job = std::make_shared<EmbeddingJob>(req, std::move(id), std::move(model), env, out);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<engine::EngineRequest> rs;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    engine::EngineRequest r;
    r.prompt = req.inputs[i];
    r.embed = env.pooling;
    r.deadline = deadline;
    r.on_output = [job, i](const engine::RequestOutput& o) { job->on_output(i, o); };
    rs.push_back(std::move(r));
  }
  queue_job(job, std::move(rs), env.scheduler, env.active, *out);
}

}  // namespace sandwich::server
