// The head's executor: its own stage of each micro-batch, sent on to node 1 as soon as it is
// done (while the head runs the next one), and the results gathered from the last node.
#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "common/stop_signal.h"
#include "pipeline/pipeline_impl.h"

namespace sandwich::engine {
namespace {

using pipeline::Clock;
using pipeline::Kind;
using pipeline::Message;

class PipelineExecutor : public Executor {
 public:
  PipelineExecutor(Pipeline::Impl& p, std::unique_ptr<Executor> own, const Model& model,
                   const std::string& role)
      : p_(p), own_(std::move(own)), model_(model) {
    // One executor for both phases tells them apart by the batch.
    phase_ = role == "decode" ? 1 : role == "prefill" ? 0 : -1;
  }

  const topotree::ServiceConfig& config() const override { return own_->config(); }

  ExecutorHealth health() const override {
    ExecutorHealth h = own_->health();
    if (p_.failed) {
      h.failed = true;
      h.message = p_.failure_text();
    }
    return h;
  }

  using Executor::run;
  void run(std::span<const BatchEntry> batch, float* logits, float* hidden) override {
    if (p_.failed) throw std::runtime_error("the pipeline is stopped: " + p_.failure_text());
    if (batch.empty()) return;
    const bool decode = std::all_of(batch.begin(), batch.end(),
                                    [](const BatchEntry& e) { return e.tokens.size() == 1; });
    const uint32_t phase = phase_ >= 0 ? static_cast<uint32_t>(phase_) : decode ? 1 : 0;
    const int want = p_.options.micro_batches > 0 ? p_.options.micro_batches
                                                  : auto_micro_batches(batch, p_.link->size());
    const auto pieces = cut_micro_batches(batch, want);
    const uint64_t step = ++p_.steps;
    const int64_t dim = model_.config.dim;
    const int nodes = p_.link->size();
    const auto timeout = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(p_.options.step_timeout_seconds));
    // Which node each micro-batch has got through (their notes), to name a late one.
    std::vector<int> through(pieces.size(), 0);
    std::vector<double> busy(static_cast<size_t>(nodes), 0.0);
    const auto started = Clock::now();
    const std::string what =
        std::string(phase == 1 ? "decode" : "prefill") + " step " + std::to_string(step);
    try {
      for (size_t m = 0; m < pieces.size(); ++m) {
        int64_t tokens = 0;
        for (const BatchEntry& e : pieces[m]) tokens += static_cast<int64_t>(e.tokens.size());
        Message msg;
        msg.kind = Kind::Step;
        msg.phase = phase;
        msg.step = step;
        msg.micro = static_cast<uint32_t>(m);
        msg.set_batch(pieces[m]);
        msg.rows.resize(static_cast<size_t>(tokens * dim));
        const auto t0 = Clock::now();
        own_->run_stage(pieces[m], StageIO{nullptr, msg.rows.data()}, nullptr, nullptr);
        busy[0] += std::chrono::duration<double>(Clock::now() - t0).count();
        p_.link->send(1, pipeline::kTagChain, pipeline::encode(msg));
      }
      // Results come in micro-batch order from the last node; a node whose stage failed answers
      // for the micro-batch itself.
      std::vector<Message> results(pieces.size());
      std::vector<bool> got(pieces.size(), false);
      std::string error;
      const auto deadline = Clock::now() + timeout;
      auto drain_notes = [&] {
        for (int src;
             (src = p_.link->probe(pipeline::MpiLink::kAnySource, pipeline::kTagProgress)) >= 0;) {
          const Message note = pipeline::decode(
              p_.link->receive(src, pipeline::kTagProgress, Clock::now() + timeout, "a note"));
          if (note.step == step && note.micro < through.size()) {
            through[note.micro] = std::max(through[note.micro], src);
            busy[static_cast<size_t>(src)] += note.busy_seconds;
          }
        }
        int late = nodes - 1;
        for (int t : through) late = std::min(late, t + 1);
        p_.set_waiting(what, late);
      };
      for (size_t n = 0; n < pieces.size();) {
        int src = -1;
        Message r =
            pipeline::decode(p_.link->receive(pipeline::MpiLink::kAnySource, pipeline::kTagReply,
                                              deadline, "a step", &src, drain_notes));
        // What is left of an earlier step that failed on this node half-way.
        if (r.step < step) continue;
        ++n;
        if (r.step != step || r.micro >= pieces.size() || got[r.micro])
          throw std::runtime_error(p_.link->name(src) + " answered a step it was not given");
        got[r.micro] = true;
        busy[static_cast<size_t>(src)] += r.busy_seconds;
        if (r.kind == Kind::Failed) {
          if (r.phase == 1) p_.fail(r.text);  // the node cannot run steps any more
          if (error.empty()) error = r.text;
        }
        results[r.micro] = std::move(r);
      }
      drain_notes();
      p_.set_waiting("", -1);
      p_.record(static_cast<int>(phase),
                std::chrono::duration<double>(Clock::now() - started).count(),
                static_cast<int>(pieces.size()), busy);
      if (!error.empty()) throw std::runtime_error(error);
      const int64_t V = model_.config.vocab_size;
      int64_t logit_row = 0, hidden_row = 0;
      for (const Message& r : results) {
        const size_t lf = static_cast<size_t>(r.logit_rows * V);
        const size_t hf = static_cast<size_t>(r.hidden_rows * dim);
        if (r.rows.size() != lf + hf)
          throw std::runtime_error(p_.link->name(nodes - 1) + " sent a malformed result");
        if (lf) std::memcpy(logits + logit_row * V, r.rows.data(), lf * sizeof(float));
        if (hf && hidden)
          std::memcpy(hidden + hidden_row * dim, r.rows.data() + lf, hf * sizeof(float));
        logit_row += r.logit_rows;
        hidden_row += r.hidden_rows;
      }
    } catch (const pipeline::NodeTimeout&) {
      // The first node some micro-batch has not got through is the one that failed or hangs.
      int late = nodes - 1;
      for (int t : through) late = std::min(late, t + 1);
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g s", p_.options.step_timeout_seconds);
      const std::string why = p_.link->name(late) + " did not finish " + what + " within " + limit;
      p_.fail(why);
      throw std::runtime_error(why);
    } catch (const std::invalid_argument&) {
      p_.set_waiting("", -1);
      throw;
    } catch (const std::exception& e) {
      // An MPI error: the job cannot go on.
      if (std::string_view(e.what()).starts_with("MPI:")) p_.fail(e.what());
      p_.set_waiting("", -1);
      throw;
    }
  }

 private:
  Pipeline::Impl& p_;
  std::unique_ptr<Executor> own_;
  const Model& model_;
  int phase_ = -1;
};

}  // namespace

std::unique_ptr<Executor> make_pipeline_executor(Pipeline::Impl& p, std::unique_ptr<Executor> own,
                                                 const Model& model, const std::string& role) {
  return std::make_unique<PipelineExecutor>(p, std::move(own), model, role);
}

}  // namespace sandwich::engine
