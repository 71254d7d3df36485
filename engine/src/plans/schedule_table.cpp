// The tuned-schedule table file: reading and writing it, this machine's fingerprint, and
// installing a table as the process's tuned schedules (kernels/tuned_schedules.h) and
// tunable-kernel parameters (kernels/kernel_tunables.h), with one warning per thing skipped.
#include "engine/plans/schedule_table.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "kernels/kernel_tunables.h"
#include "kernels/microkernel.h"
#include "kernels/schedule.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "sandwich-schedules";
constexpr int kVersion = 1;
constexpr const char* kWarn = "sandwich: schedules: ";

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t value = line.find_first_not_of(" \t", line.find(':') + 1);
    if (line.find(':') != std::string::npos && value != std::string::npos)
      return line.substr(value);
  }
  return "unknown CPU";
}

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// sysfs sizes read "32K", "1024K", "32768K" (or plain bytes).
int64_t parse_size(const std::string& s) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const std::string unit = s.substr(used);
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return v;
}

// The first CPU's data and unified caches by level, from sysfs (0 where it has none).
void read_cache_sizes(MachineFingerprint& f) {
  std::error_code ec;
  const fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = read_line(entry.path() / "type");
    if (type == "Instruction") continue;
    const int64_t bytes = parse_size(read_line(entry.path() / "size"));
    const std::string level = read_line(entry.path() / "level");
    if (level == "1") f.l1d_bytes = bytes;
    if (level == "2") f.l2_bytes = bytes;
    if (level == "3") f.l3_bytes = bytes;
  }
}

std::string join(const std::string& where, const std::string& name) {
  return where.empty() ? name : where + "." + name;
}

// Field access that names where in the file a value is missing or of the wrong type.
struct Reader {
  std::string origin;  // the file (or "plan.json: schedules") errors name

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw std::invalid_argument(origin + ": " + where + ": " + what);
  }
  const json& at(const json& obj, const std::string& where, const std::string& name) const {
    if (!obj.contains(name)) fail(join(where, name), "missing");
    return obj[name];
  }
  std::string str(const json& obj, const std::string& where, const std::string& name,
                  const std::string* fallback = nullptr) const {
    if (fallback && !obj.contains(name)) return *fallback;
    const json& v = at(obj, where, name);
    if (!v.is_string()) fail(join(where, name), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  int64_t integer(const json& v, const std::string& where) const {
    if (!v.is_number_integer()) fail(where, "expected an integer, got " + v.dump());
    return v.get<int64_t>();
  }
  int64_t integer(const json& obj, const std::string& where, const std::string& name) const {
    return integer(at(obj, where, name), join(where, name));
  }
  double number(const json& obj, const std::string& where, const std::string& name) const {
    if (!obj.contains(name)) return 0;
    const json& v = obj[name];
    if (!v.is_number()) fail(join(where, name), "expected a number, got " + v.dump());
    return v.get<double>();
  }
  const json& array(const json& obj, const std::string& where, const std::string& name) const {
    const json& v = at(obj, where, name);
    if (!v.is_array()) fail(join(where, name), "expected an array");
    return v;
  }
  void object(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where, "expected an object, got " + v.dump());
  }
  std::pair<int64_t, int64_t> m_range(const json& r, const std::string& where) const {
    const json& m = at(r, where, "m");
    if (!m.is_array() || m.size() != 2 || !m[0].is_number_integer() || !m[1].is_number_integer())
      fail(where + ".m", "expected [first M, last M], got " + m.dump());
    return {m[0].get<int64_t>(), m[1].get<int64_t>()};
  }
  std::map<std::string, int64_t> int_map(const json& obj, const std::string& where,
                                         const std::string& name) const {
    const json& v = at(obj, where, name);
    object(v, join(where, name));
    std::map<std::string, int64_t> out;
    for (const auto& [k, x] : v.items()) out[k] = integer(x, join(where, name) + "." + k);
    return out;
  }
};

MachineFingerprint machine_from_reader(const Reader& r, const json& j) {
  r.object(j, "machine");
  MachineFingerprint f;
  const std::string none;
  f.cpu = r.str(j, "machine", "cpu");
  f.isa = r.str(j, "machine", "isa");
  f.cores = r.str(j, "machine", "cores", &none);
  f.l1d_bytes = r.integer(j, "machine", "l1d_bytes");
  f.l2_bytes = r.integer(j, "machine", "l2_bytes");
  f.l3_bytes = r.integer(j, "machine", "l3_bytes");
  f.kernels = r.str(j, "machine", "kernels");
  return f;
}

// The kernels' key of a table entry (its type was checked when the table was read).
kernels::GemmKey key_of(const TunedGemm& g) {
  kernels::GemmKey key{g.n, g.k, kernels::DType::BF16, g.threads, g.pair};
  if (!kernels::set_weight_type(key, g.dtype))
    throw std::invalid_argument("unknown weight type \"" + g.dtype + "\"");
  return key;
}

void warn_line(std::ostream& warn, const std::string& what) {
  warn << kWarn << what << "\n" << std::flush;
}

// From a GEMM's thread: one line, written at once, so that ranks' lines do not interleave.
void report_miss(const kernels::GemmKey& key) {
  const kernels::TunedSchedules* t = kernels::installed_tuned_schedules();
  const std::string line =
      std::string(kWarn) + (t && t->has_key(key)
                                ? "the table's ranges of M for " + key.to_string() +
                                      " do not cover every M; the cost model's schedule is used "
                                      "outside them\n"
                                : "the table has no entry for " + key.to_string() +
                                      "; the cost model's schedule is used\n");
  std::cerr << line << std::flush;
}

// The table's GEMM schedules as the kernels take them; each entry that does not parse or
// validate for its key is left out and reported through `skip` (naming the key and range).
std::shared_ptr<kernels::TunedSchedules> gemm_schedules(
    const ScheduleTable& t, const std::function<void(const std::string&)>& skip) {
  auto table = std::make_shared<kernels::TunedSchedules>();
  for (const TunedGemm& g : t.gemms) {
    kernels::GemmKey key;
    try {
      key = key_of(g);
    } catch (const std::invalid_argument& e) {
      skip("tuned schedules for N=" + std::to_string(g.n) + " K=" + std::to_string(g.k) + ": " +
           e.what());
      continue;
    }
    for (const TunedGemmRange& r : g.ranges) {
      try {
        kernels::Schedule s;
        try {
          s = kernels::parse_schedule(r.schedule);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument("tuned schedule for " + key.to_string() + " M " +
                                      std::to_string(r.m_lo) + ".." + std::to_string(r.m_hi) +
                                      ": " + e.what());
        }
        table->add(key, r.m_lo, r.m_hi, s);
      } catch (const std::invalid_argument& e) {
        skip(e.what());
      }
    }
  }
  return table;
}

}  // namespace

json machine_fingerprint_to_json(const MachineFingerprint& f) {
  return {{"cpu", f.cpu},           {"isa", f.isa},
          {"cores", f.cores},       {"l1d_bytes", f.l1d_bytes},
          {"l2_bytes", f.l2_bytes}, {"l3_bytes", f.l3_bytes},
          {"kernels", f.kernels}};
}

MachineFingerprint machine_fingerprint_from_json(const json& j, const std::string& origin) {
  return machine_from_reader(Reader{origin}, j);
}

std::string MachineFingerprint::mismatch(const MachineFingerprint& table,
                                         const std::string& whose) const {
  std::vector<std::string> diffs;
  const auto text = [&](const char* what, const std::string& mine, const std::string& theirs) {
    if (mine != theirs)
      diffs.push_back(std::string(what) + " is \"" + mine + "\", " + whose + " \"" + theirs + "\"");
  };
  const auto bytes = [&](const char* what, int64_t mine, int64_t theirs) {
    if (mine != theirs)
      diffs.push_back(std::string(what) + " is " + std::to_string(mine) + " bytes, " + whose + " " +
                      std::to_string(theirs));
  };
  text("cpu", cpu, table.cpu);
  text("isa", isa, table.isa);
  bytes("L1d", l1d_bytes, table.l1d_bytes);
  bytes("L2", l2_bytes, table.l2_bytes);
  bytes("L3", l3_bytes, table.l3_bytes);
  text("kernels", kernels, table.kernels);
  std::string out;
  for (const auto& d : diffs) out += (out.empty() ? "" : "; ") + d;
  return out;
}

MachineFingerprint this_machine_fingerprint(const std::string& cores) {
  MachineFingerprint f;
  f.cpu = cpu_model_name();
  f.isa = std::string(kernels::isa_name(kernels::gemm_isa(kernels::DType::BF16)));
  f.cores = cores;
  read_cache_sizes(f);
  f.kernels = kernels::kernels_version();
  return f;
}

ScheduleTable read_schedule_table(const fs::path& file) {
  json j;
  try {
    j = read_json_file(file);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());  // names the file already
  }
  return schedule_table_from_json(j, file.string());
}

ScheduleTable schedule_table_from_json(const json& j, const std::string& origin) {
  const Reader r{origin};
  if (!j.is_object()) r.fail("the top level", "expected an object");
  if (!j.contains("format") || j["format"] != kFormat)
    r.fail("format", std::string("expected \"") + kFormat + "\", got " +
                         (j.contains("format") ? j["format"].dump() : "none"));
  if (!j.contains("version") || j["version"] != kVersion)
    r.fail("version", "expected " + std::to_string(kVersion) + " (this build reads only it), got " +
                          (j.contains("version") ? j["version"].dump() : "none"));
  ScheduleTable t;
  t.machine = machine_from_reader(r, r.at(j, "", "machine"));
  const std::string none;
  t.model = r.str(j, "", "model", &none);
  t.config = r.str(j, "", "config", &none);
  const json& gemms = r.array(j, "", "gemms");
  for (size_t i = 0; i < gemms.size(); ++i) {
    const std::string where = "gemms[" + std::to_string(i) + "]";
    const json& g = gemms[i];
    r.object(g, where);
    TunedGemm tg;
    tg.n = r.integer(g, where, "n");
    tg.k = r.integer(g, where, "k");
    tg.dtype = r.str(g, where, "dtype");
    if (kernels::GemmKey key; !kernels::set_weight_type(key, tg.dtype))
      r.fail(where + ".dtype",
             "expected \"f32\", \"bf16\" or a quantized type (\"q4_k\", \"q8_0\", ...), got \"" +
                 tg.dtype + "\"");
    else
      tg.dtype = kernels::weight_type_name(key);  // "Q4_K" reads as "q4_k"
    const int64_t threads = r.integer(g, where, "threads");
    if (threads < 1 || threads > 1 << 16) r.fail(where + ".threads", "out of range");
    tg.threads = static_cast<int>(threads);
    if (g.contains("pair")) {
      if (!g["pair"].is_boolean()) r.fail(where + ".pair", "expected true or false");
      tg.pair = g["pair"].get<bool>();
    }
    const json& ranges = r.array(g, where, "ranges");
    for (size_t k = 0; k < ranges.size(); ++k) {
      const std::string rw = where + ".ranges[" + std::to_string(k) + "]";
      r.object(ranges[k], rw);
      TunedGemmRange tr;
      std::tie(tr.m_lo, tr.m_hi) = r.m_range(ranges[k], rw);
      tr.schedule = r.str(ranges[k], rw, "schedule");
      tr.gflops = r.number(ranges[k], rw, "gflops");
      tr.how = r.str(ranges[k], rw, "how", &none);
      tg.ranges.push_back(std::move(tr));
    }
    t.gemms.push_back(std::move(tg));
  }
  if (j.contains("tunables")) {
    const json& tunables = r.array(j, "", "tunables");
    for (size_t i = 0; i < tunables.size(); ++i) {
      const std::string where = "tunables[" + std::to_string(i) + "]";
      const json& u = tunables[i];
      r.object(u, where);
      TunedKernel tk;
      tk.kernel = r.str(u, where, "kernel");
      tk.key = r.int_map(u, where, "key");
      const json& ranges = r.array(u, where, "ranges");
      for (size_t k = 0; k < ranges.size(); ++k) {
        const std::string rw = where + ".ranges[" + std::to_string(k) + "]";
        r.object(ranges[k], rw);
        TunedKernelRange kr;
        std::tie(kr.m_lo, kr.m_hi) = r.m_range(ranges[k], rw);
        kr.params = r.int_map(ranges[k], rw, "params");
        kr.seconds = r.number(ranges[k], rw, "seconds");
        kr.how = r.str(ranges[k], rw, "how", &none);
        tk.ranges.push_back(std::move(kr));
      }
      t.tunables.push_back(std::move(tk));
    }
  }
  if (j.contains("resume") && !j["resume"].is_null()) t.resume_json = j["resume"].dump();
  return t;
}

json schedule_table_to_json(const ScheduleTable& table) {
  json gemms = json::array();
  for (const TunedGemm& g : table.gemms) {
    json ranges = json::array();
    for (const TunedGemmRange& r : g.ranges)
      ranges.push_back({{"m", {r.m_lo, r.m_hi}},
                        {"schedule", r.schedule},
                        {"gflops", r.gflops},
                        {"how", r.how}});
    gemms.push_back({{"n", g.n},
                     {"k", g.k},
                     {"dtype", g.dtype},
                     {"threads", g.threads},
                     {"pair", g.pair},
                     {"ranges", std::move(ranges)}});
  }
  json tunables = json::array();
  for (const TunedKernel& u : table.tunables) {
    json ranges = json::array();
    for (const TunedKernelRange& r : u.ranges)
      ranges.push_back(
          {{"m", {r.m_lo, r.m_hi}}, {"params", r.params}, {"seconds", r.seconds}, {"how", r.how}});
    tunables.push_back({{"kernel", u.kernel}, {"key", u.key}, {"ranges", std::move(ranges)}});
  }
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"machine", machine_fingerprint_to_json(table.machine)},
            {"model", table.model},
            {"config", table.config},
            {"gemms", std::move(gemms)},
            {"tunables", std::move(tunables)}};
  if (!table.resume_json.empty()) {
    try {
      j["resume"] = json::parse(table.resume_json);
    } catch (const json::exception& e) {
      throw std::runtime_error(std::string("the tuner's resume state is not JSON: ") + e.what());
    }
  }
  return j;
}

void write_schedule_table(const ScheduleTable& table, const fs::path& file) {
  json j;
  try {
    j = schedule_table_to_json(table);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  write_json_file(j, file, 1);
}

std::vector<std::string> schedule_table_problems(const ScheduleTable& t,
                                                 const std::string& origin) {
  std::vector<std::string> out;
  const std::string differs = this_machine_fingerprint().mismatch(t.machine);
  if (!differs.empty())
    out.push_back(origin + " was tuned on another machine or kernel build (" + differs + ")");
  gemm_schedules(t, [&](const std::string& what) { out.push_back(origin + ": " + what); });
  // As install_kernel_params checks them, without installing anything.
  std::map<std::pair<std::string, std::map<std::string, int64_t>>,
           std::vector<std::pair<int64_t, int64_t>>>
      taken;
  for (const TunedKernel& u : t.tunables)
    for (const TunedKernelRange& r : u.ranges) {
      const std::string where = origin + ": tuned parameters of " + u.kernel + " M " +
                                std::to_string(r.m_lo) + ".." + std::to_string(r.m_hi);
      if (r.m_lo < 1 || r.m_lo > r.m_hi) {
        out.push_back(where + ": not a range of M >= 1");
        continue;
      }
      auto& ranges = taken[{u.kernel, u.key}];
      const auto overlap = std::find_if(ranges.begin(), ranges.end(), [&](const auto& o) {
        return o.first <= r.m_hi && r.m_lo <= o.second;
      });
      if (overlap != ranges.end()) {
        out.push_back(where + ": overlaps M " + std::to_string(overlap->first) + ".." +
                      std::to_string(overlap->second));
        continue;
      }
      ranges.emplace_back(r.m_lo, r.m_hi);
    }
  return out;
}

size_t install_schedule_table(const fs::path& file, std::ostream& warn) {
  ScheduleTable t;
  try {
    t = read_schedule_table(file);
  } catch (const std::exception& e) {
    kernels::install_tuned_schedules(nullptr);
    kernels::clear_kernel_params();
    warn_line(warn, std::string(e.what()) + "; the cost model's schedules are used");
    return 0;
  }
  return install_schedule_table(t, file, warn);
}

size_t install_schedule_table(const ScheduleTable& t, const std::string& origin,
                              std::ostream& warn) {
  // Whatever was installed before goes: a table that fails leaves the cost model everywhere.
  kernels::install_tuned_schedules(nullptr);
  kernels::clear_kernel_params();
  const std::string file = origin;
  try {
    const std::string differs = this_machine_fingerprint().mismatch(t.machine);
    if (!differs.empty()) {
      warn_line(warn, file + " was tuned on another machine or kernel build (" + differs +
                          "); the cost model's schedules are used");
      return 0;
    }
    auto table = gemm_schedules(t, [&](const std::string& what) {
      warn_line(warn, file + ": " + what + "; the cost model's schedule is used");
    });
    for (const TunedKernel& u : t.tunables)
      for (const TunedKernelRange& r : u.ranges) {
        try {
          kernels::install_kernel_params(u.kernel, u.key, r.m_lo, r.m_hi, r.params);
        } catch (const std::invalid_argument& e) {
          warn_line(warn, file + ": " + e.what() + "; the kernel's defaults are used");
        }
      }
    const size_t installed = table->ranges();
    kernels::install_tuned_schedules(std::move(table), report_miss);
    return installed;
  } catch (const std::exception& e) {
    // Nothing above should throw past its own handlers; never let a table stop a server.
    kernels::install_tuned_schedules(nullptr);
    kernels::clear_kernel_params();
    warn_line(warn, file + ": " + e.what() + "; the cost model's schedules are used");
    return 0;
  }
}

}  // namespace sandwich::engine
