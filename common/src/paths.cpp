#include "common/paths.h"

#include <cstdlib>

namespace sandwich {
namespace fs = std::filesystem;
namespace {

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// <repo>/<build>/bin/<tool> -> <repo>: for a build folder moved away from its source tree.
fs::path repo_of_executable() {
  return executable_dir().parent_path().parent_path();
}

}  // namespace

fs::path configs_dir() {
  if (const char* env = std::getenv("SANDWICH_CONFIGS"); env && *env) return env;
  std::error_code ec;
  // Installed: <prefix>/bin/<tool> and <prefix>/share/sandwich/configs (cmake --install).
  const fs::path installed =
      (executable_dir() / SANDWICH_INSTALLED_CONFIG_DIR_FROM_BIN).lexically_normal();
  if (fs::is_directory(installed, ec)) return installed;
  const fs::path built = SANDWICH_CONFIG_DIR;
  if (fs::is_directory(built, ec)) return built;
  const fs::path beside = repo_of_executable() / "configs";
  return fs::is_directory(beside, ec) ? beside : built;
}

fs::path shared_dir() {
  if (const char* env = std::getenv("SANDWICH_SHARED"); env && *env) return env;
  return fs::path(SANDWICH_SHARED_DEFAULT_DIR).lexically_normal();
}

fs::path user_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "sandwich";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "sandwich";
  return fs::temp_directory_path() / "sandwich";
}

fs::path default_length_trace() {
  return shared_dir() / "data" / "traces" / "sharegpt_lengths.csv";
}

}  // namespace sandwich
