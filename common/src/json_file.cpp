#include "common/json_file.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sandwich {

nlohmann::json read_json_file(const std::filesystem::path& p) {
  std::error_code ec;
  // An ifstream opens a directory fine and only fails inside the parser, with a message
  // ("basic_filebuf::underflow") that names neither the file nor the problem.
  if (std::filesystem::is_directory(p, ec))
    throw std::runtime_error(p.string() + " is a directory, not a JSON file");
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  std::string text;
  try {
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read " + p.string() + " (" + e.what() + ")");
  }
  if (in.bad()) throw std::runtime_error("cannot read " + p.string());
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(p.string() + ": invalid JSON (" + e.what() + ")");
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
