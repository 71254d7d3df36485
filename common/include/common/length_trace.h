#pragma once
// Request-length traces: (input tokens, output tokens) pairs, such as ShareGPT's in
// shared/data/traces/sharegpt_lengths.csv, read by the tuner and the serving benchmark alike.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sandwich {

struct LengthPair {
  int32_t input = 0, output = 0;
  bool operator==(const LengthPair&) const = default;
};

// One request length as text ("128"): a whole number from 1 to 10,000,000. Throws
// std::invalid_argument naming `what` and the text.
int32_t parse_length(const std::string& text, const std::string& what);

// A CSV whose header names the input_tokens and output_tokens columns (in any order, other
// columns ignored), or two numeric columns without a header. Blank lines and lines starting
// with '#' are skipped; lengths are whole numbers from 1 to 10,000,000. Throws
// std::runtime_error naming the file and the line.
std::vector<LengthPair> read_length_trace(const std::filesystem::path& csv);

}  // namespace sandwich
