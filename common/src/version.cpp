#include "common/version.h"

namespace sandwich {

const char* project_version() {
  return SANDWICH_VERSION;
}

const char* git_commit() {
  return SANDWICH_GIT_COMMIT;
}

// The compiler's target, not the machine's: the kernels still choose theirs at run time.
const char* build_isa() {
#if defined(__AVX512BF16__)
  return "AVX-512 BF16";
#elif defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__)
  return "AVX2";
#else
  return "baseline x86-64";
#endif
}

std::string version_line(std::string_view program) {
  return std::string(program) + " " + project_version() + " (git " + git_commit() + ", " +
         build_isa() + " build)";
}

}  // namespace sandwich
