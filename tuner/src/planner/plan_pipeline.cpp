// The pipeline part of a plan for a cluster: every P with its split, memory and figures.
#include <iomanip>
#include <sstream>

#include "planner/pair_choice.h"
#include "planner/pipeline_choice.h"
#include "tuner/planner/plan_stages.h"

namespace sandwich::tuner {
namespace {

// Bytes in GB (MB below one GB: small models' stages).
std::string bytes_text(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (bytes >= 1e9)
    os << bytes / 1e9 << " GB";
  else
    os << bytes / 1e6 << " MB";
  return os.str();
}

std::string percent(double f) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << f * 100 << "%";
  return os.str();
}

void decode_line(std::ostream& os, const DecodeEstimate& d) {
  os << "batch " << d.batch << ": " << ms_text(d.step_ms) << " ms a step, "
     << rate_text(d.tokens_per_s) << " tokens/s (" << d.micro_batches << " micro-batch"
     << (d.micro_batches > 1 ? "es" : "") << ", utilization " << percent(d.utilization) << ")";
}

}  // namespace

std::string pipeline_report(const PlanRun& run) {
  const Cluster& cl = *run.machine.cluster;
  const PipelineChoice c = choose_pipeline(run);
  std::ostringstream os;
  os << "\npipeline   " << cl.nodes << " node" << (cl.nodes > 1 ? "s" : "") << " over "
     << cl.link.describe() << "; " << bytes_text(static_cast<double>(run.machine.memory_bytes))
     << " (" << std::fixed << std::setprecision(1)
     << static_cast<double>(run.machine.memory_bytes) / (1ull << 30)
     << " GiB) of memory per node; the KV cache of " << run.decode_batch << " sequences of "
     << run.model.config.max_seq_len << " tokens\n";
  os << "           hidden states f32 (" << run.model.config.dim * 4
     << " bytes a token) cross the link between stages; decode steps split the batch into "
        "micro-batches\n";
  for (const PipelineEstimate& e : c.by_stages) {
    const int n = c.pipelines(e.stages);
    os << "P = " << e.stages << " (" << n << " pipeline" << (n > 1 ? "s" : "") << " of " << e.stages
       << " node" << (e.stages > 1 ? "s" : "") << "): layers " << e.split_text()
       << ", weights per node";
    for (size_t i = 0; i < e.split.size(); ++i)
      os << (i ? " / " : " ") << bytes_text(e.split[i].weight_bytes);
    os << ", KV per node";
    for (size_t i = 0; i < e.split.size(); ++i)
      os << (i ? " / " : " ") << bytes_text(e.split[i].kv_bytes);
    os << "\n";
    if (!e.fits) {
      os << "        does not fit: " << e.why_not << "\n";
      continue;
    }
    os << "        prefill " << short_config(e.prefill) << ": " << rate_text(e.prefill_tokens_per_s)
       << " tokens/s with chunks in flight; TTFT " << ms_text(e.ttft_ms)
       << " ms for the mean prompt (" << e.mean_prompt << " tokens)\n";
    os << "        decode " << short_config(e.decode) << ": ";
    for (size_t i = 0; i < e.decode_at.size(); ++i) {
      if (i) os << "; ";
      decode_line(os, e.decode_at[i]);
    }
    if (e.stages > 1) {
      os << "\n        link per hop: " << ms_text(e.prefill_hop_ms) << " ms for the prompt's chunk";
      for (const auto& d : e.decode_at)
        os << ", " << ms_text(d.hop_ms) << " ms for a micro-batch at batch " << d.batch;
    }
    os << "\n        cluster: " << n << " x " << rate_text(e.decode_at.back().tokens_per_s) << " = "
       << rate_text(c.cluster_tokens_per_s(e)) << " tokens/s at batch " << c.batch << "\n";
  }
  os << "chosen     " << c.why << "\n";
  if (c.chosen > 1)
    os << "run with   mpirun -np " << c.chosen
       << (run.request.hostfile.empty() ? "" : " --hostfile " + shell_quote(run.request.hostfile))
       << " sandwichd --model " << shell_quote(run.request.load.model)
       << (run.request.load.load_format == engine::LoadFormat::Dummy ? " --load-format dummy" : "")
       << (run.out.empty() ? "" : " --plan " + shell_quote(run.out.string()))
       << " --pipeline-parallel " << c.chosen << " --layer-split " << layer_split_option(c) << "\n";
  return os.str();
}

}  // namespace sandwich::tuner
