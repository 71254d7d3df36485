#pragma once
// Where tests find ../shared/data and a scratch folder.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/paths.h"

namespace sandwich::test {

inline std::filesystem::path data_dir() {
  return ::sandwich::shared_dir() / "data";
}
// The checkout and the build's bin/ folder (test_paths.cpp).
std::filesystem::path source_dir();
std::filesystem::path bin_dir();

// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  try {
    return {std::istreambuf_iterator<char>(in), {}};
  } catch (const std::exception&) {  // a read error (a /proc file of a process that just left)
    return {};
  }
}

// What /proc/PID/stat says of a process: its name, state ('Z': a zombie; 0: gone) and parent.
struct ProcStat {
  std::string name;
  char state = 0;
  int ppid = 0;
};
inline ProcStat proc_stat(int pid) {
  const std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t open = s.find('('), close = s.rfind(')');
  ProcStat p;
  if (open == std::string::npos || close == std::string::npos || close + 4 > s.size()) return p;
  p.name = s.substr(open + 1, close - open - 1);
  p.state = s[close + 2];
  p.ppid = std::atoi(s.c_str() + close + 4);
  return p;
}

// The processes whose parent is `pid` and whose name starts with `name`.
inline std::vector<int> children_named(int pid, const std::string& name) {
  std::vector<int> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string d = e.path().filename().string();
    if (d.find_first_not_of("0123456789") != std::string::npos) continue;
    const ProcStat p = proc_stat(std::stoi(d));
    if (p.ppid == pid && p.name.rfind(name, 0) == 0) found.push_back(std::stoi(d));
  }
  return found;
}

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sandwich-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Sets (or, given nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Skips the calling test when the reference data folder is missing.
#define SANDWICH_REQUIRE_DATA()                                                      \
  do {                                                                               \
    if (!std::filesystem::exists(::sandwich::test::data_dir()))                      \
      GTEST_FAIL() << "reference data not found at " << ::sandwich::test::data_dir() \
                   << " (set SANDWICH_SHARED to the folder holding data/)";          \
  } while (0)

}  // namespace sandwich::test
