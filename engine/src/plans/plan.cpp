#include "engine/plans/plan.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_file.h"

namespace sandwich::engine {
namespace {

int machine_cpus() {
  return static_cast<int>(topotree::this_machine().all_cpus.size());
}

}  // namespace

int max_threads() {
  return 4 * machine_cpus();
}

int resolve_threads(int threads, const std::string& what) {
  if (threads < 0 || threads > max_threads())
    throw std::invalid_argument(what + " must be 0 (all cores) to " +
                                std::to_string(max_threads()) + " (4 x this machine's " +
                                std::to_string(machine_cpus()) + " CPUs), got " +
                                std::to_string(threads));
  return threads == 0 ? machine_cpus() : threads;
}

topotree::ServiceConfig single_rank_config(int threads) {
  threads = resolve_threads(threads, "the thread count");
  const topotree::LoadedTopology& m = topotree::this_machine();
  // Threads past the CPU count share CPUs, so the machine's CPUs are taken in turn (not through
  // parse_service_config, which refuses a CPU given twice).
  std::set<int> nodes;
  topotree::Rank rank;
  for (int t = 0; t < threads; ++t) {
    const size_t i = static_cast<size_t>(t) % m.all_cpus.size();
    rank.cpus.push_back(m.all_cpus[i]);
    nodes.insert(m.all_cpus_numa[i]);
  }
  rank.numa_nodes.assign(nodes.begin(), nodes.end());
  rank.numa = nodes.size() == 1 ? *nodes.begin() : -1;
  topotree::ServiceConfig c;
  c.ranks.push_back(std::move(rank));
  return c;
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kPlanFormat = "sandwich-plan";

[[noreturn]] void bad(const fs::path& file, const std::string& where, const std::string& what) {
  throw std::invalid_argument(file.string() + ": " + where + ": " + what);
}

topotree::ServiceConfig config_of(const fs::path& file, const json& j, const std::string& phase,
                                  std::vector<std::string>* problems) {
  if (!j.contains(phase)) bad(file, phase, "missing (a plan needs \"prefill\" and \"decode\")");
  const json& c = j[phase];
  try {
    const json& config = c.is_object() && c.contains("config") ? c["config"] : c;
    if (config.is_string()) return topotree::parse_service_config(config.get<std::string>());
    return topotree::service_config_from_json(config);
  } catch (const std::invalid_argument& e) {
    if (!problems) bad(file, phase, e.what());
    problems->push_back(file.string() + ": " + phase + ": " + e.what());
    return {};
  }
}

PhaseFigures figures_of(const json& c) {
  PhaseFigures f;
  if (!c.is_object()) return f;
  if (c.contains("simulated_ms") && c["simulated_ms"].is_number())
    f.simulated_ms = c["simulated_ms"].get<double>();
  if (c.contains("measured_ms") && c["measured_ms"].is_number())
    f.measured_ms = c["measured_ms"].get<double>();
  return f;
}

json phase_json(const topotree::ServiceConfig& c, const PhaseFigures& f) {
  json j = {{"config", c.to_json()}, {"short", c.to_string(2)}};
  if (f.simulated_ms >= 0) j["simulated_ms"] = f.simulated_ms;
  if (f.measured_ms >= 0) j["measured_ms"] = f.measured_ms;
  return j;
}

ModelIdentity identity_from_json(const fs::path& file, const json& j) {
  if (!j.is_object()) bad(file, "model", "expected an object, got " + j.dump());
  ModelIdentity m;
  auto str = [&](const char* name, std::string& out, bool required) {
    if (!j.contains(name)) {
      if (required) bad(file, std::string("model.") + name, "missing");
      return;
    }
    if (!j[name].is_string())
      bad(file, std::string("model.") + name, "expected a string, got " + j[name].dump());
    out = j[name].get<std::string>();
  };
  auto num = [&](const char* name, auto& out, bool required) {
    if (!j.contains(name)) {
      if (required) bad(file, std::string("model.") + name, "missing");
      return;
    }
    if (!j[name].is_number_integer())
      bad(file, std::string("model.") + name, "expected an integer, got " + j[name].dump());
    out = j[name].get<std::remove_reference_t<decltype(out)>>();
  };
  str("name", m.name, false);
  str("architecture", m.architecture, true);
  str("dtype", m.dtype, true);
  str("weights", m.weights, false);
  str("weights_name", m.weights_name, false);
  num("dim", m.shape.dim, true);
  num("n_layers", m.shape.n_layers, true);
  num("n_heads", m.shape.n_heads, true);
  num("n_kv_heads", m.shape.n_kv_heads, true);
  num("head_dim", m.shape.head_dim, true);
  num("ffn_dim", m.shape.ffn_dim, true);
  num("vocab_size", m.shape.vocab_size, true);
  str("file", m.file, false);
  num("file_bytes", m.file_bytes, false);
  num("file_mtime", m.file_mtime, false);
  return m;
}

json identity_json(const ModelIdentity& m) {
  const ModelShape& s = m.shape;
  json j = {
      {"name", m.name},         {"architecture", m.architecture}, {"dtype", m.dtype},
      {"weights", m.weights},   {"weights_name", m.weights_name}, {"dim", s.dim},
      {"n_layers", s.n_layers}, {"n_heads", s.n_heads},           {"n_kv_heads", s.n_kv_heads},
      {"head_dim", s.head_dim}, {"ffn_dim", s.ffn_dim},           {"vocab_size", s.vocab_size}};
  if (!m.file.empty()) {
    j["file"] = m.file;
    j["file_bytes"] = m.file_bytes;
    j["file_mtime"] = m.file_mtime;
  }
  return j;
}

}  // namespace

std::string ModelIdentity::mismatch(const ModelIdentity& plan) const {
  std::string out;
  auto add = [&](const std::string& d) { out += (out.empty() ? "" : "; ") + d; };
  auto text = [&](const char* what, const std::string& mine, const std::string& theirs) {
    if (mine != theirs)
      add(std::string(what) + " is \"" + mine + "\", the plan's \"" + theirs + "\"");
  };
  auto num = [&](const char* what, int64_t mine, int64_t theirs) {
    if (mine != theirs)
      add(std::string(what) + " is " + std::to_string(mine) + ", the plan's " +
          std::to_string(theirs));
  };
  text("architecture", architecture, plan.architecture);
  text("dtype", dtype, plan.dtype);
  // A plan from before the weights were recorded compares dtype alone; two float models differ
  // in dtype already (their weights are their dtype).
  const bool both_float = weights == dtype && plan.weights == plan.dtype;
  if (!plan.weights.empty() && weights != plan.weights && !both_float) {
    // "q4_k_m (q4_k x 73, f32 x 25, q6_k x 13)"; "bf16" alone.
    const auto named = [](const ModelIdentity& m) {
      const std::string& name = m.weights_name.empty() ? m.weights : m.weights_name;
      return name == m.weights ? name : name + " (" + m.weights + ")";
    };
    add("the plan was made for " + named(plan) + " weights, this model is " + named(*this));
  }
  num("dim", shape.dim, plan.shape.dim);
  num("n_layers", shape.n_layers, plan.shape.n_layers);
  num("n_heads", shape.n_heads, plan.shape.n_heads);
  num("n_kv_heads", shape.n_kv_heads, plan.shape.n_kv_heads);
  num("head_dim", shape.head_dim, plan.shape.head_dim);
  num("ffn_dim", shape.ffn_dim, plan.shape.ffn_dim);
  num("vocab_size", shape.vocab_size, plan.shape.vocab_size);
  return out;
}

std::string ModelIdentity::file_difference(const ModelIdentity& plan) const {
  if (file_bytes < 0 || plan.file_bytes < 0) return "";
  if (file_bytes == plan.file_bytes && file_mtime == plan.file_mtime) return "";
  return "the weights file differs from the one the plan was made with (" +
         std::to_string(file_bytes) + " bytes, modified at " + std::to_string(file_mtime) +
         "; the plan's " + plan.file + ": " + std::to_string(plan.file_bytes) + " bytes at " +
         std::to_string(plan.file_mtime) + ")";
}

ModelIdentity model_identity(const ModelConfig& c, const std::string& dtype,
                             const std::string& weights_file, const std::string& weights,
                             const std::string& weights_name) {
  ModelIdentity m;
  m.name = c.name;
  m.dtype = dtype;
  m.weights = weights.empty() ? dtype : weights;
  m.weights_name = weights_name.empty() ? m.weights : weights_name;
  m.shape = shape_of(c);
  std::error_code ec;
  if (weights_file.empty() || !fs::exists(weights_file, ec)) return m;
  m.file = weights_file;
  auto mtime_of = [](const fs::path& p) {
    std::error_code e;
    const auto t = fs::last_write_time(p, e);
    if (e) return int64_t{-1};
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::file_clock::to_sys(t).time_since_epoch())
                                    .count());
  };
  if (fs::is_directory(weights_file, ec)) {
    // A Hugging Face folder: its files together.
    int64_t bytes = 0, mtime = -1;
    for (const auto& e : fs::directory_iterator(weights_file, ec)) {
      std::error_code e2;
      if (!e.is_regular_file(e2)) continue;
      bytes += static_cast<int64_t>(e.file_size(e2));
      mtime = std::max(mtime, mtime_of(e.path()));
    }
    m.file_bytes = bytes;
    m.file_mtime = mtime;
  } else {
    m.file_bytes = static_cast<int64_t>(fs::file_size(weights_file, ec));
    if (ec) m.file_bytes = -1;
    m.file_mtime = mtime_of(weights_file);
  }
  return m;
}

Plan load_plan(const fs::path& file, std::vector<std::string>* config_problems) {
  json j;
  try {
    j = read_json_file(file, file_kinds::kPlan);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());  // names the file already
  }
  if (!j.is_object())
    throw std::invalid_argument(file.string() +
                                ": a plan is a JSON object with \"prefill\" and \"decode\"");
  Plan plan;
  plan.file = file;
  if (j.contains("format")) {
    if (j["format"] != kPlanFormat)
      bad(file, "format",
          std::string("expected \"") + kPlanFormat + "\", got " + j["format"].dump());
    if (!j.contains("version") || j["version"] != kPlanVersion)
      bad(file, "version",
          "expected " + std::to_string(kPlanVersion) + " (this build reads only it), got " +
              (j.contains("version") ? j["version"].dump() : "none"));
    plan.version = kPlanVersion;
    if (!j.contains("model")) bad(file, "model", "missing");
    plan.model = identity_from_json(file, j["model"]);
    if (!j.contains("machine")) bad(file, "machine", "missing");
    plan.machine = machine_fingerprint_from_json(j["machine"], file.string());
    auto text = [&](const char* name, std::string& out) {
      if (!j.contains(name)) return;
      if (!j[name].is_string()) bad(file, name, "expected a string, got " + j[name].dump());
      out = j[name].get<std::string>();
    };
    text("created", plan.created);
    text("command", plan.command);
    text("objective", plan.objective);
    if (j.contains("details")) plan.details_json = j["details"].dump();
  }
  plan.prefill = config_of(file, j, "prefill", config_problems);
  plan.decode = config_of(file, j, "decode", config_problems);
  plan.prefill_figures = figures_of(j["prefill"]);
  plan.decode_figures = figures_of(j["decode"]);
  if (j.contains("schedules")) {
    const json& s = j["schedules"];
    if (s.is_object()) {
      plan.inline_schedules = schedule_table_from_json(s, file.string() + ": schedules");
    } else {
      if (!s.is_string() || s.get<std::string>().empty())
        bad(file, "schedules", "must be the path of a schedule table, or a table");
      plan.schedules = file.parent_path() / s.get<std::string>();
    }
  }
  return plan;
}

void write_plan(const Plan& plan, const fs::path& file) {
  json j = json::object();
  j["format"] = kPlanFormat;
  j["version"] = kPlanVersion;
  if (!plan.created.empty()) j["created"] = plan.created;
  if (!plan.command.empty()) j["command"] = plan.command;
  if (plan.model) j["model"] = identity_json(*plan.model);
  if (plan.machine) j["machine"] = machine_fingerprint_to_json(*plan.machine);
  j["prefill"] = phase_json(plan.prefill, plan.prefill_figures);
  j["decode"] = phase_json(plan.decode, plan.decode_figures);
  if (plan.inline_schedules) {
    j["schedules"] = schedule_table_to_json(*plan.inline_schedules);
  } else if (plan.schedules) {
    // Relative to the plan's folder when it lies there or below: the two move together.
    std::error_code ec;
    const fs::path dir = fs::absolute(file, ec).parent_path();
    const fs::path rel = fs::absolute(*plan.schedules, ec).lexically_relative(dir);
    const bool inside = !rel.empty() && *rel.begin() != "..";
    j["schedules"] = (inside ? rel : fs::absolute(*plan.schedules, ec)).string();
  }
  if (!plan.objective.empty()) j["objective"] = plan.objective;
  if (!plan.details_json.empty()) {
    try {
      j["details"] = json::parse(plan.details_json);
    } catch (const json::exception& e) {
      throw std::runtime_error(file.string() + ": the plan's details are not JSON: " + e.what());
    }
  }
  write_json_file(j, file, 2);
}

}  // namespace sandwich::engine
