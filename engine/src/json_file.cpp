#include "json_file.h"

#include <fstream>
#include <stdexcept>

namespace sandwich {

nlohmann::json read_json_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(p.string() + ": invalid JSON (" + e.what() + ")");
  }
}

}  // namespace sandwich
