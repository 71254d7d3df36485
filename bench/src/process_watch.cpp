#include "process_watch.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace sandwich::bench {

uint64_t status_bytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = field + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0)
      return std::strtoull(line.c_str() + key.size(), nullptr, 10) * 1024;
  return 0;
}

std::string process_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

namespace {

// State and parent of a process from /proc/<pid>/stat; false if it is gone or dead. The comm
// field may hold spaces and parentheses, so the fields are read after its last ')'.
bool read_stat(const std::filesystem::path& dir, pid_t* ppid) {
  std::ifstream in(dir / "stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(stat.substr(close + 1));
  char state = 0;
  return (fields >> state >> *ppid) && state != 'Z' && state != 'X';
}

}  // namespace

bool alive(pid_t pid) {
  pid_t ppid = 0;
  return read_stat("/proc/" + std::to_string(pid), &ppid);
}

std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;  // one pass over /proc
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t ppid = 0;
    if (read_stat(e.path(), &ppid)) children.emplace(ppid, static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out, todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

}  // namespace sandwich::bench
