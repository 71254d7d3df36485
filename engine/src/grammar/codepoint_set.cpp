#include "grammar/codepoint_set.h"

#include <algorithm>
#include <string>

#include "engine/grammar/grammar.h"

namespace sandwich::engine::grammar {

CodepointSet CodepointSet::range(uint32_t lo, uint32_t hi) {
  CodepointSet s;
  s.add(lo, hi);
  return s;
}

CodepointSet CodepointSet::all() {
  CodepointSet s;
  s.add(0, 0xD7FF);
  s.add(0xE000, kMaxCodePoint);
  return s;
}

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  hi = std::min(hi, kMaxCodePoint);
  std::vector<std::pair<uint32_t, uint32_t>> out;
  out.reserve(iv_.size() + 1);
  bool placed = false;
  for (const auto& [a, b] : iv_) {
    if (uint64_t{b} + 1 < lo) {
      out.emplace_back(a, b);
    } else if (uint64_t{hi} + 1 < a) {
      if (!placed) out.emplace_back(lo, hi), placed = true;
      out.emplace_back(a, b);
    } else {  // overlapping or adjacent: widen the new interval
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  }
  if (!placed) out.emplace_back(lo, hi);
  std::sort(out.begin(), out.end());
  iv_ = std::move(out);
}

void CodepointSet::add(const CodepointSet& other) {
  for (const auto& [a, b] : other.iv_) add(a, b);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& [a, b] : iv_) {
    if (a > next) out.add(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
  return out.intersect(all());
}

CodepointSet CodepointSet::intersect(const CodepointSet& other) const {
  CodepointSet out;
  size_t i = 0, j = 0;
  while (i < iv_.size() && j < other.iv_.size()) {
    const uint32_t lo = std::max(iv_[i].first, other.iv_[j].first);
    const uint32_t hi = std::min(iv_[i].second, other.iv_[j].second);
    if (lo <= hi) out.iv_.emplace_back(lo, hi);
    (iv_[i].second < other.iv_[j].second) ? ++i : ++j;
  }
  return out;
}

bool CodepointSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(iv_.begin(), iv_.end(), std::make_pair(cp, kMaxCodePoint + 1));
  return it != iv_.begin() && std::prev(it)->second >= cp;
}

uint64_t CodepointSet::count() const {
  uint64_t n = 0;
  for (const auto& [a, b] : iv_) n += uint64_t{b} - a + 1;
  return n;
}

uint32_t next_code_point(std::string_view s, size_t& pos, std::string_view what) {
  const auto bad = [&] {
    return GrammarError(std::string(what) + ": byte " + std::to_string(pos) + " is not UTF-8 text");
  };
  const unsigned char c = s[pos];
  if (c < 0x80) return ++pos, c;
  int len = 0;
  uint32_t cp = 0, min = 0;
  if ((c >> 5) == 0x6)
    len = 2, cp = c & 0x1F, min = 0x80;
  else if ((c >> 4) == 0xE)
    len = 3, cp = c & 0x0F, min = 0x800;
  else if ((c >> 3) == 0x1E)
    len = 4, cp = c & 0x07, min = 0x10000;
  else
    throw bad();
  if (pos + len > s.size()) throw bad();
  for (int k = 1; k < len; ++k) {
    const unsigned char d = s[pos + k];
    if ((d >> 6) != 0x2) throw bad();
    cp = (cp << 6) | (d & 0x3F);
  }
  if (cp < min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) throw bad();
  pos += len;
  return cp;
}

}  // namespace sandwich::engine::grammar
