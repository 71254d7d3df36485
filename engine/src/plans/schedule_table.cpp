// The tuned-schedule table file: reading and writing it, and this machine's fingerprint.
#include "engine/plans/schedule_table.h"

#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "kernels/cpu_identity.h"
#include "kernels/microkernel.h"
#include "kernels/tuned_schedules.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "sandwich-schedules";
constexpr int kVersion = 1;

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
  const kernels::CpuIdentity& cpu = kernels::cpu_identity();
  MachineFingerprint f;
  f.cpu = cpu.model;
  f.isa = std::string(kernels::isa_name(kernels::gemm_isa(kernels::DType::BF16)));
  f.cores = cores;
  f.l1d_bytes = cpu.l1d_bytes;
  f.l2_bytes = cpu.l2_bytes;
  f.l3_bytes = cpu.l3_bytes;
  f.kernels = kernels::kernels_version();
  return f;
}

ScheduleTable read_schedule_table(const fs::path& file) {
  json j;
  try {
    j = read_json_file(file, file_kinds::kScheduleTable);
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

}  // namespace sandwich::engine
