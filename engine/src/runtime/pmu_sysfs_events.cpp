#include "runtime/pmu_sysfs_events.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "common/cpu_list.h"

namespace sandwich::engine {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    parts.push_back(s.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

uint64_t parse_number(std::string_view text, std::string_view what) {
  const std::string s(trim(text));
  try {
    size_t used = 0;
    const uint64_t v = std::stoull(s, &used, 0);  // 0x.. or decimal, as sysfs writes them
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("PMU event term " + std::string(what) + ": '" + s +
                              "' is not a number");
}

uint64_t& word_of(PmuConfigWords& w, std::string_view name, std::string_view term) {
  if (name == "config") return w.config;
  if (name == "config1") return w.config1;
  if (name == "config2") return w.config2;
  throw std::invalid_argument("PMU event term " + std::string(term) + ": unknown word '" +
                              std::string(name) + "'");
}

// Puts `value` into the bits a format names ("config:0-7,32-35"), low bits first.
void place(PmuConfigWords& w, std::string_view format, uint64_t value, std::string_view term) {
  const size_t colon = format.find(':');
  if (colon == std::string_view::npos)
    throw std::invalid_argument("PMU format of " + std::string(term) + ": '" + std::string(format) +
                                "' has no ':'");
  uint64_t& word = word_of(w, trim(format.substr(0, colon)), term);
  uint64_t rest = value;
  for (std::string_view range : split(format.substr(colon + 1), ',')) {
    const size_t dash = range.find('-');
    const uint64_t lo = parse_number(range.substr(0, dash), term);
    const uint64_t hi =
        dash == std::string_view::npos ? lo : parse_number(range.substr(dash + 1), term);
    if (hi < lo || hi > 63)
      throw std::invalid_argument("PMU format of " + std::string(term) + ": bad bit range '" +
                                  std::string(range) + "'");
    const uint64_t bits = hi - lo + 1;
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    word |= (rest & mask) << lo;
    rest = bits == 64 ? 0 : rest >> bits;
  }
  if (rest != 0)
    throw std::invalid_argument("PMU event term " + std::string(term) + ": value " +
                                std::to_string(value) + " does not fit its format '" +
                                std::string(format) + "'");
}

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) throw std::runtime_error("cannot read " + p.string());
  return std::string(trim(line));
}

// The bus events a PMU family names, read first.
struct BusEventNames {
  std::string pmu_prefix;
  std::vector<std::string> events;  // exact names, or prefixes ending in '*'
};

bool name_matches(const std::string& name, const std::string& pattern) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  return name == pattern;
}

}  // namespace

PmuConfigWords encode_pmu_event(std::string_view terms,
                                const std::function<std::string(std::string_view)>& format) {
  PmuConfigWords w;
  for (std::string_view term : split(trim(terms), ',')) {
    term = trim(term);
    if (term.empty()) continue;
    const size_t eq = term.find('=');
    const std::string_view field = trim(term.substr(0, eq));
    const uint64_t value =
        eq == std::string_view::npos ? 1 : parse_number(term.substr(eq + 1), term);
    if (field == "config" || field == "config1" || field == "config2") {
      word_of(w, field, term) |= value;  // a raw word needs no format
      continue;
    }
    const std::string f = format(field);
    if (f.empty())
      throw std::invalid_argument("PMU event term " + std::string(term) +
                                  ": the PMU has no format '" + std::string(field) + "'");
    place(w, f, value, term);
  }
  return w;
}

std::vector<SysfsPmuEvent> find_memory_bus_events(const std::filesystem::path& devices) {
  // Free-running IMC counters first would double count beside the programmable ones: a family
  // is used only where no earlier one was found.
  const std::vector<BusEventNames> families = {
      {"uncore_imc_free_running", {"data_read", "data_write"}},
      // Servers' CAS counts; older client parts (Sandy Bridge to Skylake) name data_reads.
      {"uncore_imc", {"cas_count_read", "cas_count_write", "data_reads", "data_writes"}},
      {"amd_df", {"dram_channel_data_controller_*"}},
  };
  std::error_code ec;
  std::vector<std::filesystem::path> pmus;
  for (const auto& entry : std::filesystem::directory_iterator(devices, ec))
    pmus.push_back(entry.path());
  std::sort(pmus.begin(), pmus.end());
  std::vector<SysfsPmuEvent> found;
  for (const BusEventNames& family : families) {
    for (const auto& pmu : pmus) {
      const std::string name = pmu.filename().string();
      if (!name.starts_with(family.pmu_prefix)) continue;
      // "uncore_imc" must not take "uncore_imc_free_running_0".
      if (family.pmu_prefix == "uncore_imc" && name.starts_with("uncore_imc_free_running"))
        continue;
      try {
        const uint32_t type = static_cast<uint32_t>(parse_number(first_line(pmu / "type"), "type"));
        std::vector<int> cpus = {0};
        if (std::filesystem::exists(pmu / "cpumask", ec))
          cpus = parse_cpu_list(first_line(pmu / "cpumask"));
        std::vector<std::filesystem::path> events;
        for (const auto& e : std::filesystem::directory_iterator(pmu / "events", ec))
          events.push_back(e.path());
        std::sort(events.begin(), events.end());
        const auto format = [&](std::string_view field) -> std::string {
          const auto p = pmu / "format" / std::string(field);
          return std::filesystem::exists(p, ec) ? first_line(p) : "";
        };
        for (const auto& e : events) {
          const std::string ename = e.filename().string();
          if (ename.find('.') != std::string::npos) continue;  // .scale, .unit files
          if (std::none_of(family.events.begin(), family.events.end(),
                           [&](const std::string& p) { return name_matches(ename, p); }))
            continue;
          found.push_back({name, ename, type, encode_pmu_event(first_line(e), format), cpus});
        }
      } catch (const std::exception&) {
        continue;  // a PMU we cannot read is one we cannot count with
      }
    }
    if (!found.empty()) return found;
  }
  return found;
}

}  // namespace sandwich::engine
