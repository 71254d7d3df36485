#pragma once
// A plain reference for the grammar tests: the parse stacks simulated directly over the
// compiled rules (vectors of positions, no interning, no transition table, no masks), to tell
// whether a byte string is a viable prefix of some sentence.
#include <cstdint>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar::reference {

using Stack = std::vector<int32_t>;  // bottom first; the top is a terminal's position
using Stacks = std::set<Stack>;

// All stacks reachable from continuing at `pos` over `rest` without matching a byte.
inline void expand(const Grammar::Impl& g, int32_t pos, Stack rest, Stacks& out,
                   std::set<std::pair<int32_t, Stack>>& seen) {
  if (!seen.insert({pos, rest}).second) return;
  const Element& e = g.elements[pos];
  if (e.kind == Element::Kind::Terminal) {
    rest.push_back(pos);
    out.insert(std::move(rest));
  } else if (e.kind == Element::Kind::End) {
    if (rest.empty()) {
      out.insert(Stack{});
    } else {
      int32_t back = rest.back();
      rest.pop_back();
      expand(g, back, std::move(rest), out, seen);
    }
  } else {
    Stack below = rest;
    if (g.elements[pos + 1].kind != Element::Kind::End) below.push_back(pos + 1);
    for (int32_t start : g.alternatives[e.value]) expand(g, start, below, out, seen);
  }
}

inline Stacks start(const Grammar::Impl& g) {
  Stacks out;
  std::set<std::pair<int32_t, Stack>> seen;
  for (int32_t s : g.alternatives[g.root]) expand(g, s, {}, out, seen);
  return out;
}

inline Stacks step(const Grammar::Impl& g, const Stacks& now, uint8_t b) {
  Stacks out;
  std::set<std::pair<int32_t, Stack>> seen;
  for (const Stack& s : now) {
    if (s.empty() || !g.terminals[g.elements[s.back()].value].has(b)) continue;
    Stack rest(s.begin(), s.end() - 1);
    expand(g, s.back() + 1, std::move(rest), out, seen);
  }
  return out;
}

inline Stacks after(const Grammar::Impl& g, const Stacks& now, std::string_view bytes) {
  if (bytes.empty()) return now;
  Stacks cur = step(g, now, static_cast<uint8_t>(bytes[0]));
  for (size_t i = 1; i < bytes.size() && !cur.empty(); ++i)
    cur = step(g, cur, static_cast<uint8_t>(bytes[i]));
  return cur;
}

inline bool complete(const Stacks& s) {
  return s.count(Stack{}) > 0;
}

}  // namespace sandwich::engine::grammar::reference
