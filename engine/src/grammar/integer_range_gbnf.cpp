#include "grammar/integer_range_gbnf.h"

#include <vector>

namespace sandwich::engine::grammar {

namespace {

std::string digit_class(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  return std::string("[") + a + "-" + b + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return {};
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string join_alts(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return "(" + out + ")";
}

std::string seq(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of one length between a and b (a <= b, same length).
std::string same_length(const std::string& a, const std::string& b) {
  if (a.empty()) return {};
  if (a == b) return "\"" + a + "\"";
  if (a[0] == b[0])
    return seq(std::string("\"") + a[0] + "\"", same_length(a.substr(1), b.substr(1)));
  const size_t n = a.size() - 1;
  const std::string ra = a.substr(1), rb = b.substr(1);
  std::vector<std::string> alts;
  char from = a[0], to = b[0];
  if (ra.find_first_not_of('0') != std::string::npos) {
    alts.push_back(seq(std::string("\"") + a[0] + "\"", same_length(ra, std::string(n, '9'))));
    ++from;
  }
  std::string high;
  if (rb.find_first_not_of('9') != std::string::npos) {
    high = seq(std::string("\"") + b[0] + "\"", same_length(std::string(n, '0'), rb));
    --to;
  }
  if (from <= to) alts.push_back(seq(digit_class(from, to), any_digits(n)));
  if (!high.empty()) alts.push_back(high);
  return join_alts(alts);
}

// Non-negative integers from lo up to hi (none: unbounded).
std::string non_negative(uint64_t lo, std::optional<uint64_t> hi) {
  const std::string slo = std::to_string(lo);
  const size_t len_lo = slo.size(), len_hi = hi ? std::to_string(*hi).size() : len_lo;
  std::vector<std::string> alts;
  for (size_t len = len_lo; len <= len_hi; ++len) {
    const std::string a = len == len_lo ? slo : "1" + std::string(len - 1, '0');
    const std::string b = hi && len == len_hi ? std::to_string(*hi) : std::string(len, '9');
    alts.push_back(same_length(a, b));
  }
  if (!hi) alts.push_back("[1-9] [0-9]{" + std::to_string(len_lo) + ",}");
  return join_alts(alts);
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {  // the negative part, by magnitude
    const uint64_t from = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<uint64_t> to;
    if (lo) to = magnitude(*lo);
    alts.push_back("\"-\" " + non_negative(from, to));
  }
  if (!hi || *hi >= 0) {
    std::optional<uint64_t> to;
    if (hi) to = uint64_t(*hi);
    alts.push_back(non_negative(lo && *lo > 0 ? uint64_t(*lo) : 0, to));
  }
  return join_alts(alts);
}

}  // namespace sandwich::engine::grammar
