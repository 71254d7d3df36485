// Joining the MPI job, starting the workers, and ending the job: in order (the workers leave
// when told), or, after a failure, at once (MPI_Abort, so that no node is left waiting).
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "engine/runtime/kv_cache.h"
#include "pipeline/pipeline_impl.h"

namespace sandwich::engine {

using pipeline::Clock;
using pipeline::Kind;
using pipeline::Message;

namespace {

// How long the workers get to start their executors (forking rank groups, placing weights).
constexpr auto kStartTimeout = std::chrono::seconds(300);

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Nodes that mpirun started on one host without binding them (it binds none when the host is
// oversubscribed) would each take every CPU, and their ranks would pin to the same ones: each
// takes its share of the host's CPUs instead, before anything reads this machine's topology. An
// explicit --bind-to (none included) is the user's choice and stands.
// Returns what it did, for the start-up log ("" when nothing).
std::string share_host_cpus() {
  const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local_rank || !local_size || std::getenv("OMPI_MCA_hwloc_base_binding_policy")) return "";
  const int rank = std::atoi(local_rank), size = std::atoi(local_size);
  if (size <= 1 || rank < 0 || rank >= size) return "";
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  // Bound by mpirun (or by the user): its binding stands.
  if (static_cast<long>(cpus.size()) < sysconf(_SC_NPROCESSORS_ONLN)) return "";
  const size_t n = cpus.size();
  std::vector<int> mine;
  if (n >= static_cast<size_t>(size)) {
    for (size_t i = n * rank / size; i < n * (rank + 1) / size; ++i) mine.push_back(cpus[i]);
  } else {
    mine.push_back(cpus[static_cast<size_t>(rank) % n]);
  }
  CPU_ZERO(&set);
  for (int c : mine) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return "";
  std::string list;
  for (int c : mine) {
    if (!list.empty()) list += ',';
    list += std::to_string(c);
  }
  return "mpirun left the " + std::to_string(size) +
         " nodes on this host unbound: this one takes CPU" + (mine.size() > 1 ? "s " : " ") + list;
}

}  // namespace

void Pipeline::Impl::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(failure_mu);
  if (failed) return;
  failure = why;
  failed = true;
}

std::string Pipeline::Impl::failure_text() {
  std::lock_guard<std::mutex> lock(failure_mu);
  return failure;
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Pipeline> Pipeline::join(const PipelineOptions& o) {
  const int launched = pipeline::MpiLink::launched_processes();
  if (o.stages < 1) throw std::runtime_error("--pipeline-parallel must be at least 1");
  if (o.stages == 1 && launched == 1) return nullptr;
  if (launched != o.stages)
    throw std::runtime_error(
        launched == 1
            ? "--pipeline-parallel " + std::to_string(o.stages) + " needs " +
                  std::to_string(o.stages) + " processes, one per node: start it with mpirun -np " +
                  std::to_string(o.stages) + " [--hostfile H] ..."
            : "mpirun started " + std::to_string(launched) +
                  " processes but --pipeline-parallel is " + std::to_string(o.stages) +
                  ": give --pipeline-parallel " + std::to_string(launched) + " (or mpirun -np " +
                  std::to_string(o.stages) + ")");
  if (!(o.step_timeout_seconds > 0))
    throw std::runtime_error("the pipeline's step timeout must be positive");
  if (o.micro_batches < 0) throw std::runtime_error("--micro-batches must not be negative");
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->cpu_note = share_host_cpus();
  impl->link = std::make_unique<pipeline::MpiLink>();
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

Pipeline::~Pipeline() {
  Impl& p = *impl_;
  if (p.failed) {
    std::fprintf(stderr, "%s: %s; ending the MPI job\n", program_invocation_short_name,
                 p.failure_text().c_str());
    p.link->abort(1);
  }
  if (head()) {
    for (int phase = 0; phase < 2; ++phase)
      if (p.stats[phase].steps > 0)
        std::fprintf(stderr, "%s: pipeline %s: %s\n", program_invocation_short_name,
                     phase == 0 ? "prefill" : "decode", p.stats[phase].describe().c_str());
    try {
      Message m;
      m.kind = Kind::Shutdown;
      p.link->send(1, pipeline::kTagChain, pipeline::encode(m));
      p.link->flush(Clock::now() + std::chrono::seconds(10));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: ending the pipeline: %s\n", program_invocation_short_name,
                   e.what());
      p.link->abort(1);
    }
  }
}

int Pipeline::node() const {
  return impl_->link->rank();
}
int Pipeline::nodes() const {
  return impl_->link->size();
}
std::string Pipeline::node_name(int node) const {
  return impl_->link->name(node);
}

LayerRange Pipeline::layers(const ModelConfig& c) const {
  return pipeline_layer_split(c, nodes(), impl_->options.layer_split).at(node());
}

std::string Pipeline::describe_node(const Model& model, const topotree::ServiceConfig& prefill,
                                    const topotree::ServiceConfig& decode) {
  return model.layers_text() + ", " + mib(model.weight_bytes()) + " of weights, prefill " +
         prefill.to_string() + ", decode " + decode.to_string();
}

void Pipeline::set_head_options(const Model& model, const PipelineNodeOptions& o) {
  const topotree::ServiceConfig pc = o.prefill_config.value_or(single_rank_config(0));
  impl_->head_line = node_name(0) + ": " + describe_node(model, pc, o.decode_config.value_or(pc)) +
                     (impl_->cpu_note.empty() ? "" : " (" + impl_->cpu_note + ")");
}

void Pipeline::Impl::start_workers(const KVCache& kv, const ExecutorLimits& limits) {
  Message m;
  m.kind = Kind::Start;
  m.start = {kv.num_blocks(),
             static_cast<int32_t>(kv.dtype()),
             limits.max_tokens,
             limits.max_entries,
             limits.max_logit_rows,
             limits.max_hidden_rows,
             limits.batch_invariant ? 1 : 0,
             static_cast<int32_t>(limits.ablation.allreduce),
             limits.ablation.no_split_k ? 1 : 0,
             limits.step_timeout_seconds};
  link->send(1, pipeline::kTagChain, pipeline::encode(m));
  std::vector<std::string> answers(link->size());
  std::string failure;
  const auto deadline = Clock::now() + kStartTimeout;
  for (int n = 1; n < link->size(); ++n) {
    int src = -1;
    Message a = pipeline::decode(link->receive(pipeline::MpiLink::kAnySource, pipeline::kTagReply,
                                               deadline, "the start of its executors", &src));
    if (a.kind == Kind::Failed && failure.empty()) failure = a.text;
    answers[src] = a.text;
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  lines.clear();
  lines.push_back(head_line + "; KV cache " + kv.describe());
  for (int n = 1; n < link->size(); ++n) lines.push_back(answers[n]);
  started = true;
}

ExecutorFactory Pipeline::executor_factory() {
  return [this](const Model& model, KVCache& kv, const topotree::ServiceConfig& config,
                const ExecutorLimits& limits) -> std::unique_ptr<Executor> {
    Impl& p = *impl_;
    if (!p.started) {
      try {
        p.start_workers(kv, limits);
      } catch (const pipeline::NodeTimeout& e) {
        p.fail(e.what());
        throw std::runtime_error(e.what());
      } catch (const std::exception& e) {
        p.fail(e.what());
        throw;
      }
    }
    return make_pipeline_executor(p, make_executor(model, kv, config, limits), model, limits.role);
  };
}

void Pipeline::Impl::set_waiting(const std::string& step, int node) {
  std::lock_guard<std::mutex> lock(wait_mu);
  if (step != wait_step) wait_since = Clock::now();
  wait_step = step;
  wait_node = node;
}

std::string Pipeline::waiting_for() const {
  // mpirun's SIGTERM after a node died comes within milliseconds: maybe while the head runs its
  // own stage of the next step, or just after the step was sent. So for a moment, a step that
  // waits for a node gets kStuck to move on (a healthy node's answer) before it counts as
  // stuck; all of it well below the SIGKILL mpirun sends a while after the SIGTERM.
  constexpr auto kStuck = std::chrono::milliseconds(250);
  const auto give_up = Clock::now() + 2 * kStuck;
  const Impl& p = *impl_;
  std::unique_lock<std::mutex> lock(p.wait_mu);
  for (;;) {
    const auto now = Clock::now();
    if (!p.wait_step.empty() && p.wait_node >= 0 && now - p.wait_since >= kStuck)
      return p.link->name(p.wait_node) + " had not finished " + p.wait_step;
    if (now > give_up) return "";
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    lock.lock();
  }
}

void Pipeline::Impl::record(int phase, double wall, int micro_batches,
                            const std::vector<double>& busy) {
  std::lock_guard<std::mutex> lock(stats_mu);
  PipelineStats& s = stats[phase];
  ++s.steps;
  s.micro_batches += static_cast<uint64_t>(micro_batches);
  s.wall_seconds += wall;
  s.busy_seconds.resize(busy.size(), 0.0);
  for (size_t i = 0; i < busy.size(); ++i) s.busy_seconds[i] += busy[i];
}

PipelineStats Pipeline::stats(int phase) const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats[phase];
}

double PipelineStats::utilization() const {
  if (wall_seconds <= 0 || busy_seconds.empty()) return 0;
  double sum = 0;
  for (double b : busy_seconds) sum += b;
  return sum / (wall_seconds * static_cast<double>(busy_seconds.size()));
}

std::string PipelineStats::describe() const {
  if (steps == 0) return "no steps";
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%llu steps of %.1f micro-batches, %.3f ms each, utilization %.2f (",
                static_cast<unsigned long long>(steps), static_cast<double>(micro_batches) / steps,
                wall_seconds / steps * 1e3, utilization());
  std::string s = buf;
  for (size_t i = 0; i < busy_seconds.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%snode %zu %.2f", i ? ", " : "", i,
                  wall_seconds > 0 ? busy_seconds[i] / wall_seconds : 0.0);
    s += buf;
  }
  return s + ")";
}

void add_pipeline_options(ArgParser& p, PipelineOptions& o) {
  p.add("--pipeline-parallel,-pp", &o.stages,
        "nodes the layers are split over, one MPI process each: start with mpirun -np N "
        "[--hostfile H] (node 0 serves; default 1)",
        "N");
  p.option("--layer-split", "N,N,...",
           "layers per node (default: balanced, the output head counted as the layers a "
           "quarter of its bytes equal)",
           [&o](const std::string& v) {
             o.layer_split.clear();
             size_t at = 0;
             while (at <= v.size()) {
               const size_t comma = std::min(v.find(',', at), v.size());
               o.layer_split.push_back(static_cast<int32_t>(
                   ArgParser::parse_int("--layer-split", v.substr(at, comma - at))));
               at = comma + 1;
             }
           });
  p.add("--micro-batches", &o.micro_batches,
        "pieces a pipeline step is cut into (default 0: a decode batch in one per node, a "
        "prefill step in pieces of 32 tokens or more, at most 16 per node)",
        "N");
  p.add("--pipeline-timeout", &o.step_timeout_seconds,
        "seconds a node may take over a step before the job ends (default 60)", "S");
}

std::vector<std::string> Pipeline::node_lines() const {
  return impl_->lines;
}

}  // namespace sandwich::engine
