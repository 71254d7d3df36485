#pragma once
// A set of Unicode code points as sorted, disjoint, non-adjacent closed intervals: what a regex
// class, `.` or \d stands for, before it is written as a GBNF character class.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace sandwich::engine::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class CodepointSet {
 public:
  CodepointSet() = default;
  static CodepointSet of(uint32_t cp) { return range(cp, cp); }
  static CodepointSet range(uint32_t lo, uint32_t hi);
  static CodepointSet all();  // every code point but the surrogates (UTF-8 cannot carry them)

  void add(uint32_t lo, uint32_t hi);
  void add(const CodepointSet& other);
  CodepointSet complement() const;  // within all()
  CodepointSet intersect(const CodepointSet& other) const;
  CodepointSet minus(const CodepointSet& other) const { return intersect(other.complement()); }
  bool contains(uint32_t cp) const;
  bool empty() const { return iv_.empty(); }
  uint64_t count() const;
  const std::vector<std::pair<uint32_t, uint32_t>>& intervals() const { return iv_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> iv_;
};

// Decodes one UTF-8 character at s[pos], advancing pos. Throws GrammarError (naming `what`) on a
// byte sequence that is not UTF-8.
uint32_t next_code_point(std::string_view s, size_t& pos, std::string_view what);

}  // namespace sandwich::engine::grammar
