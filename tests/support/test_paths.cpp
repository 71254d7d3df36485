#include <filesystem>

#include "test_data.h"

namespace sandwich::test {

std::filesystem::path source_dir() {
  return SANDWICH_SOURCE_DIR;
}
std::filesystem::path bin_dir() {
  return SANDWICH_BIN_DIR;
}

}  // namespace sandwich::test
