#include "common/length_trace.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/bounded_file.h"

namespace sandwich {
namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(trim(f));
  return out;
}

}  // namespace

int32_t parse_length(const std::string& text, const std::string& what) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < 1 || v > 10'000'000)
    throw std::invalid_argument(what + " must be a whole number from 1 to 10000000, not '" + text +
                                "'");
  return static_cast<int32_t>(v);
}

std::vector<LengthPair> read_length_trace(const std::filesystem::path& csv) {
  const std::string path = csv.string();
  std::istringstream in(read_bounded_file(csv, file_kinds::kLengthTrace));
  std::vector<LengthPair> out;
  size_t in_col = 0, out_col = 1;
  bool header_seen = false;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto f = split_fields(line);
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    const bool numeric = !f[0].empty() && std::isdigit(static_cast<unsigned char>(f[0][0]));
    if (out.empty() && !header_seen && !numeric) {
      auto column = [&](const char* name) -> size_t {
        auto it = std::find(f.begin(), f.end(), name);
        if (it == f.end())
          throw std::runtime_error(where + "the header has no '" + name + "' column");
        return static_cast<size_t>(it - f.begin());
      };
      in_col = column("input_tokens");
      out_col = column("output_tokens");
      header_seen = true;
      continue;
    }
    if (f.size() <= std::max(in_col, out_col))
      throw std::runtime_error(where + "expected at least " +
                               std::to_string(std::max(in_col, out_col) + 1) + " columns, got '" +
                               line + "'");
    try {
      out.push_back(
          {parse_length(f[in_col], "input_tokens"), parse_length(f[out_col], "output_tokens")});
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(where + e.what());
    }
  }
  if (out.empty()) throw std::runtime_error(path + " holds no request lengths");
  return out;
}

}  // namespace sandwich
