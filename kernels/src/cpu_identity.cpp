// This CPU's model name (/proc/cpuinfo) and cache sizes (sysfs).
#include "kernels/cpu_identity.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace sandwich::kernels {
namespace {

namespace fs = std::filesystem;

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

void read_cache_sizes(CpuIdentity& id) {
  std::error_code ec;
  const fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = read_line(entry.path() / "type");
    if (type == "Instruction") continue;
    const int64_t bytes = parse_size(read_line(entry.path() / "size"));
    const std::string level = read_line(entry.path() / "level");
    if (level == "1") id.l1d_bytes = bytes;
    if (level == "2") id.l2_bytes = bytes;
    if (level == "3") id.l3_bytes = bytes;
  }
}

CpuIdentity read_cpu_identity() {
  CpuIdentity id;
  id.model = cpu_model_name();
  read_cache_sizes(id);
  return id;
}

}  // namespace

const CpuIdentity& cpu_identity() {
  static const CpuIdentity id = read_cpu_identity();
  return id;
}

}  // namespace sandwich::kernels
