#include "common/json_file.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "common/bounded_file.h"

namespace sandwich {

nlohmann::json read_json_file(const std::filesystem::path& p, const FileKind& kind) {
  const std::string text = read_bounded_file(p, kind);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string(kind.name) + " " + p.string() + ": invalid JSON (" +
                             e.what() + ")");
  }
}

void write_json_file(const nlohmann::json& j, const std::filesystem::path& p, int indent) {
  namespace fs = std::filesystem;
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << j.dump(indent) << "\n";
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error("cannot write " + tmp.string() + " (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + p.string() + ": " +
                             ec.message());
  }
}

}  // namespace sandwich
