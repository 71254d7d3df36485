#include "tuner/commands/kernels_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "common/cli.h"
#include "common/cpu_list.h"
#include "engine/formats/matrix_types.h"
#include "engine/formats/model_config.h"
#include "engine/plans/plan.h"
#include "topotree/service_config.h"
#include "tuner/ctrl_c.h"
#include "tuner/kernel_table_tuning.h"
#include "tuner/model_gemms.h"
#include "tuner/time_text.h"

namespace sandwich::tuner {
namespace {

using Clock = std::chrono::steady_clock;

void check_options(const KernelsRequest& r) {
  if (r.out.empty()) throw CliError("kernels needs -o FILE (the schedule table to write)");
  if (r.load.model.empty()) throw CliError("kernels needs --model M");
  if (r.tuner.max_m < 1) throw CliError("--max-m must be at least 1");
  if (r.tuner.window < 1) throw CliError("--window must be at least 1");
  if (!(r.tuner.reuse_threshold >= 0)) throw CliError("--reuse-threshold must be >= 0");
  if (!(r.profiler.min_seconds >= 0)) throw CliError("--min-seconds must be >= 0");
}

// The shape and every matrix's type only: dummy weights need not be made. A weights file is
// loaded, so that a quantized one keys each GEMM by its matrix's own type (q4_k, q6_k, ...).
struct ModelMatrices {
  engine::ModelConfig model;
  engine::MatrixTypes types;
  std::string storage, storage_name;
};

ModelMatrices model_matrices(engine::LoadOptions lo) {
  ModelMatrices m;
  if (lo.load_format == engine::LoadFormat::Dummy) {
    m.model = std::filesystem::exists(lo.model) ? engine::read_model_config(lo.model)
                                                : engine::load_preset(lo.model);
    m.storage = m.storage_name = lo.dtype == engine::WeightDType::F32 ? "f32" : "bf16";
    m.types = engine::uniform_matrix_types(m.model, m.storage);
  } else {
    lo.require_tokenizer = false;
    const auto loaded = engine::load_model(lo);
    m.model = loaded->config;
    m.types = engine::matrix_types(*loaded);
    m.storage = loaded->weight_storage;
    m.storage_name = loaded->weight_storage_name;
  }
  return m;
}

TableTuningSpec kernels_spec(const KernelsRequest& r, const std::string& config_text,
                             const topotree::ServiceConfig& config, const ModelMatrices& m,
                             const std::vector<kernels::GemmKey>& keys) {
  TableTuningSpec spec;
  spec.model = r.load.model;
  spec.config = config_text;
  spec.dtype = m.storage;
  spec.max_m = r.tuner.max_m;
  spec.tuner = r.tuner;
  spec.profiler = r.profiler;
  for (const kernels::GemmKey& k : keys)
    spec.gemms.push_back({k, r.tuner.max_m, r.tuner.max_m, r.profiler.cpus});
  if (!r.no_attention) {
    const AttentionShape shape =
        attention_shape(m.model, config.rank_count(), config.threads_per_rank());
    const AttentionTuneOptions ao;
    spec.attention.push_back({true, shape, r.tuner.max_m, 0});
    spec.attention.push_back({false, shape, ao.max_decode_batch, ao.decode_context});
  }
  return spec;
}

// The progress line: rewritten in place on a terminal, else a line every 5 seconds and at the
// end of each group.
std::function<void(const TableTuningProgress&)> progress_printer(Clock::time_point t0, bool tty) {
  auto last_line = std::make_shared<Clock::time_point>(t0 - std::chrono::hours(1));
  auto in_attention = std::make_shared<bool>(false);
  return [=](const TableTuningProgress& pr) {
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    if (pr.attention) {
      if (!*in_attention && tty) std::cerr << "\n";
      *in_attention = true;
      os << "[attention] " << pr.what << "  M " << pr.m << "/" << pr.max_m << "  elapsed "
         << clock_text(elapsed);
    } else {
      const double remaining = elapsed * (1 - pr.fraction) / std::max(1e-9, pr.fraction);
      os << "[" << pr.index << "/" << pr.count << "] " << pr.what << "  M " << pr.m << "/"
         << pr.max_m << "  best " << pr.best_gflops << " GFLOPS  elapsed " << clock_text(elapsed)
         << "  remaining ~" << (pr.fraction > 0.01 ? clock_text(remaining) : std::string("?"));
    }
    if (tty) {
      std::cerr << "\r\033[K" << os.str() << std::flush;
    } else if (now - *last_line > std::chrono::seconds(5) || pr.m == pr.max_m) {
      *last_line = now;
      std::cerr << os.str() << "\n";
    }
  };
}

std::string summary(const KernelsRequest& r, const TableTuningResult& result, size_t groups,
                    double wall) {
  const TunerStats& st = result.stats;
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  os << "wrote " << r.out << "\n";
  os << "groups            " << groups << " (M = 1.." << r.tuner.max_m << " each)\n";
  os << "schedules profiled " << st.profiled << "; cache hits " << st.cache_hits << "\n";
  os << "saved             " << st.window_saved << " micro-kernel searches by the window, "
     << st.reuse_saved_m << " M by reuse, " << st.sparse_saved_m << " M by sparse search ("
     << st.searched_m << " M searched)\n";
  os << "confirmation      " << st.confirm_rejected
     << " winners gave way to the cost model's schedule when timed beside it\n";
  if (result.attention_kernels > 0)
    os << "attention         " << result.attention_kernels << " kernels, "
       << result.attention_stats.measured << " parameter sets timed, "
       << result.attention_stats.searched_m << " M searched, " << result.attention_stats.reused_m
       << " reused\n";
  os << "wall time         " << wall << " s\n";
  os << "tuned vs cost model (geometric mean at the measured M):\n";
  for (const GemmGroupResult& g : result.groups) {
    double log_sum = 0;
    int n = 0;
    for (const TunedPoint& pt : g.points)
      if (pt.seconds > 0 && pt.default_seconds > 0) {
        log_sum += std::log(pt.default_seconds / pt.seconds);
        ++n;
      }
    os << "  " << g.key.to_string() << ": " << (n ? std::exp(log_sum / n) : 1.0) << "x over " << n
       << " M\n";
  }
  return os.str();
}

}  // namespace

int run_kernels(KernelsRequest r) {
  check_options(r);
  std::string config_text = r.config;
  const topotree::ServiceConfig config = config_text.empty()
                                             ? engine::single_rank_config(0)
                                             : topotree::parse_service_config(config_text);
  if (config_text.empty()) config_text = "1x" + std::to_string(config.threads_per_rank());
  r.profiler.cpus = config.ranks.at(0).cpus;
  const std::vector<int>& cpus = r.profiler.cpus;
  const ModelMatrices m = model_matrices(r.load);
  const std::vector<kernels::GemmKey> keys =
      model_gemms(m.model, config.rank_count(), config.threads_per_rank(), m.types);
  const TableTuningSpec spec = kernels_spec(r, config_text, config, m, keys);

  if (r.resume) check_resumable(spec, r.out);
  const bool tty = isatty(STDERR_FILENO);
  const std::function<bool()> stop = stop_on_ctrl_c();
  const auto t0 = Clock::now();
  std::cerr << "tuning " << keys.size() << " GEMM shapes of " << m.model.name << " ("
            << (m.storage == m.storage_name ? m.storage + ", "
                                            : m.storage_name + ": " + m.storage + "; ")
            << config_text << ", CPUs " << format_cpu_list(cpus) << "), M = 1.." << r.tuner.max_m
            << "\n";
  const TableTuningResult result =
      tune_schedule_table(spec, r.out, r.resume, stop, {}, progress_printer(t0, tty));
  if (tty) std::cerr << "\n";
  if (result.status == TableTuningResult::Status::Interrupted) {
    std::cerr << "interrupted: wrote the table so far to " << r.out
              << "; rerun the same command with --resume to continue\n";
    return 130;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << summary(r, result, keys.size(), wall);
  return 0;
}

}  // namespace sandwich::tuner
