// Writes the generated seeds (generated_seeds.h) of every target named on the command line into
// OUT/<target>/, for scripts/fuzz.sh. Usage: fuzz_seeds DATA_DIR OUT TARGET...
#include <filesystem>
#include <fstream>
#include <iostream>

#include "generated_seeds.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fuzz_seeds DATA_DIR OUT TARGET...\n";
    return 2;
  }
  for (int i = 3; i < argc; ++i) {
    const std::filesystem::path dir = std::filesystem::path(argv[2]) / argv[i];
    std::filesystem::create_directories(dir);
    for (const auto& [name, bytes] : sandwich::fuzz::generated_seeds(argv[i], argv[1]))
      std::ofstream(dir / name, std::ios::binary) << bytes;
  }
  return 0;
}
