#include "tuner/trace_sampler.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

namespace sandwich::tuner {

double RequestTrace::mean_input() const {
  double s = 0;
  for (const auto& r : requests) s += r.input;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double RequestTrace::mean_output() const {
  double s = 0;
  for (const auto& r : requests) s += r.output;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double RequestTrace::mean_decode_context() const {
  double weighted = 0, steps = 0;
  for (const auto& r : requests) {
    weighted += static_cast<double>(r.output) * (r.input + (r.output - 1) / 2.0);
    steps += r.output;
  }
  return steps > 0 ? weighted / steps : 0;
}

std::vector<RequestLengths> read_length_table(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  if (!in) throw std::invalid_argument("cannot read request length table " + csv.string());
  std::vector<RequestLengths> out;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto comma = line.find(',');
    char* end = nullptr;
    const long a = comma == std::string::npos ? 0 : std::strtol(line.c_str(), &end, 10);
    const bool a_ok = comma != std::string::npos && end == line.c_str() + comma;
    const long b = a_ok ? std::strtol(line.c_str() + comma + 1, &end, 10) : 0;
    if (!a_ok || *end != '\0' || a < 0 || b < 0) {
      if (line_no == 1) continue;  // header
      throw std::invalid_argument(csv.string() + ":" + std::to_string(line_no) +
                                  ": expected 'input_tokens,output_tokens', got '" + line + "'");
    }
    out.push_back({static_cast<int32_t>(a), static_cast<int32_t>(b)});
  }
  if (out.empty()) throw std::invalid_argument(csv.string() + " holds no request lengths");
  return out;
}

RequestTrace sample_trace(const std::vector<RequestLengths>& table, int n, uint64_t seed,
                          int32_t max_seq_len, const std::string& table_name) {
  if (table.empty()) throw std::invalid_argument("cannot sample a trace from an empty table");
  if (n < 1) throw std::invalid_argument("a trace needs at least one request");
  if (max_seq_len < 2)
    throw std::invalid_argument("the model's context must hold at least 2 tokens");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, table.size() - 1);
  RequestTrace t;
  for (int i = 0; i < n; ++i) {
    RequestLengths r = table[pick(rng)];
    r.input = std::clamp(r.input, 1, max_seq_len - 1);
    r.output = std::clamp(r.output, 1, max_seq_len - r.input);
    t.requests.push_back(r);
  }
  t.source = std::to_string(n) + " requests sampled from " + table_name + " (seed " +
             std::to_string(seed) + ")";
  return t;
}

std::filesystem::path default_trace_table() {
  std::filesystem::path shared;
  if (const char* env = std::getenv("SANDWICH_SHARED"); env && *env) {
    shared = env;
  } else {
#ifdef SANDWICH_SHARED_DEFAULT_DIR
    shared = SANDWICH_SHARED_DEFAULT_DIR;
#else
    shared = "../shared";
#endif
  }
  return shared / "data" / "traces" / "sharegpt_lengths.csv";
}

}  // namespace sandwich::tuner
