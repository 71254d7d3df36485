// A worker node: starts its KV cache and executors when the head says, then runs its stage of
// every micro-batch that reaches it and passes the hidden states on (or, on the last node, sends
// the logits to the head), until the head ends the job.
#include <signal.h>

#include <cstdio>
#include <stdexcept>

#include "engine/plans/plan.h"
#include "engine/runtime/kv_cache.h"
#include "pipeline/pipeline_impl.h"

namespace sandwich::engine {

using pipeline::Clock;
using pipeline::Kind;
using pipeline::Message;

int Pipeline::serve(const Model& model, const PipelineNodeOptions& o) {
  Impl& p = *impl_;
  pipeline::MpiLink& link = *p.link;
  const int me = link.rank(), prev = me - 1, last = link.size() - 1;
  // The job ends when the head says; a signal mpirun passes on (Ctrl-C) lets the head drain.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  const auto forever = Clock::time_point::max();
  std::unique_ptr<KVCache> kv;
  std::unique_ptr<Executor> prefill, decode_own;
  Executor* decode = nullptr;
  const int64_t dim = model.config.dim, V = model.config.vocab_size;
  auto reply = [&](Message m) { link.send(0, pipeline::kTagReply, pipeline::encode(m)); };
  for (;;) {
    Message msg = pipeline::decode(link.receive(prev, pipeline::kTagChain, forever, "a step"));
    if (msg.kind == Kind::Shutdown) {
      if (me != last) link.send(me + 1, pipeline::kTagChain, pipeline::encode(msg));
      link.flush(Clock::now() + std::chrono::seconds(10));
      return 0;
    }
    if (msg.kind == Kind::Start) {
      if (me != last) link.send(me + 1, pipeline::kTagChain, pipeline::encode(msg));
      Message answer;
      answer.kind = Kind::Start;
      try {
        const pipeline::StartInfo& s = msg.start;
        const auto dtype = static_cast<KVCacheDType>(s.kv_dtype);
        const LayerRange layers = model.layers();
        kv = std::make_unique<KVCache>(
            model.config, KVCache::bytes_for_blocks(model.config, s.kv_blocks, dtype, layers),
            dtype, layers);
        ExecutorLimits limits;
        limits.max_tokens = s.max_tokens;
        limits.max_entries = s.max_entries;
        limits.max_logit_rows = s.max_logit_rows;
        limits.max_hidden_rows = s.max_hidden_rows;
        limits.batch_invariant = s.batch_invariant != 0;
        limits.ablation.allreduce = static_cast<AllReduceAlgorithm>(s.allreduce);
        limits.ablation.no_split_k = s.no_split_k != 0;
        limits.step_timeout_seconds = s.step_timeout_seconds;
        const topotree::ServiceConfig pc = o.prefill_config.value_or(single_rank_config(0));
        const topotree::ServiceConfig dc = o.decode_config.value_or(pc);
        limits.role = dc == pc ? "prefill and decode" : "prefill";
        prefill = make_executor(model, *kv, pc, limits);
        limits.role = "decode";
        if (!(dc == pc)) decode_own = make_executor(model, *kv, dc, limits);
        decode = decode_own ? decode_own.get() : prefill.get();
        answer.text = link.name(me) + ": " + describe_node(model, pc, dc) +
                      (p.cpu_note.empty() ? "" : " (" + p.cpu_note + ")") + "; KV cache " +
                      kv->describe();
      } catch (const std::exception& e) {
        answer.kind = Kind::Failed;
        answer.text = link.name(me) + " cannot start: " + e.what();
      }
      reply(std::move(answer));
      continue;
    }
    if (msg.kind != Kind::Step) continue;
    Message out;
    out.step = msg.step;
    out.micro = msg.micro;
    out.phase = msg.phase;
    try {
      if (!prefill) throw std::runtime_error("a step before the start");
      Executor& ex = msg.phase == 1 ? *decode : *prefill;
      const std::vector<BatchEntry> batch = msg.batch();
      const auto t0 = Clock::now();
      const auto busy = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
      if (me == last) {
        for (const BatchEntry& e : batch) {
          out.logit_rows += static_cast<int32_t>(e.logit_rows());
          out.hidden_rows += static_cast<int32_t>(e.hidden_rows());
        }
        out.rows.resize(static_cast<size_t>(out.logit_rows * V + out.hidden_rows * dim));
        ex.run_stage(batch, StageIO{msg.rows.data(), nullptr}, out.rows.data(),
                     out.hidden_rows ? out.rows.data() + out.logit_rows * V : nullptr);
        out.kind = Kind::Result;
        out.busy_seconds = busy();
        reply(std::move(out));
      } else {
        out.kind = Kind::Step;
        out.set_batch(batch);
        out.rows.resize(static_cast<size_t>(static_cast<int64_t>(msg.tokens.size()) * dim));
        ex.run_stage(batch, StageIO{msg.rows.data(), out.rows.data()}, nullptr, nullptr);
        const double took = busy();
        link.send(me + 1, pipeline::kTagChain, pipeline::encode(out));
        Message note;
        note.busy_seconds = took;
        note.kind = Kind::Result;
        note.step = msg.step;
        note.micro = msg.micro;
        link.send(0, pipeline::kTagProgress, pipeline::encode(note));
      }
    } catch (const std::exception& e) {
      Message failed;
      failed.kind = Kind::Failed;
      failed.step = msg.step;
      failed.micro = msg.micro;
      const bool fatal =
          (prefill && prefill->health().failed) || (decode && decode->health().failed);
      failed.phase = fatal ? 1 : 0;
      failed.text = link.name(me) + ": " + e.what();
      reply(std::move(failed));
    }
  }
}

}  // namespace sandwich::engine
