#include "grammar/grammar_checks.h"

#include <string>
#include <utility>
#include <vector>

namespace sandwich::engine::grammar {
namespace {

// Which rules match the empty string: a worklist over the alternatives' rule references.
std::vector<bool> nullable_rules(const Grammar::Impl& g) {
  const size_t n = g.alternatives.size();
  std::vector<bool> nullable(n, false);
  struct Alt {
    int32_t rule;
    int32_t missing;  // references not yet known to be nullable
  };
  std::vector<Alt> alts;
  std::vector<std::vector<int32_t>> used_in(n);  // rule -> alternatives referencing it
  std::vector<int32_t> work;
  for (size_t r = 0; r < n; ++r)
    for (int32_t start : g.alternatives[r]) {
      int32_t refs = 0;
      bool terminal = false;
      for (int32_t p = start; g.elements[p].kind != Element::Kind::End; ++p) {
        if (g.elements[p].kind == Element::Kind::Terminal)
          terminal = true;
        else
          ++refs;
      }
      if (terminal) continue;
      int32_t id = static_cast<int32_t>(alts.size());
      alts.push_back({static_cast<int32_t>(r), refs});
      for (int32_t p = start; g.elements[p].kind != Element::Kind::End; ++p)
        used_in[g.elements[p].value].push_back(id);
      if (refs == 0 && !nullable[r]) {
        nullable[r] = true;
        work.push_back(static_cast<int32_t>(r));
      }
    }
  while (!work.empty()) {
    int32_t r = work.back();
    work.pop_back();
    for (int32_t a : used_in[r])
      if (--alts[a].missing == 0 && !nullable[alts[a].rule]) {
        nullable[alts[a].rule] = true;
        work.push_back(alts[a].rule);
      }
  }
  return nullable;
}

}  // namespace

void check_left_recursion(const Grammar::Impl& g) {
  const size_t n = g.alternatives.size();
  const auto nullable = nullable_rules(g);
  // Edges r -> s where s can come first in r (after nothing but empty-matching elements).
  std::vector<std::vector<int32_t>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (int32_t start : g.alternatives[r])
      for (int32_t p = start; g.elements[p].kind == Element::Kind::RuleRef; ++p) {
        int32_t s = g.elements[p].value;
        // A repetition loop's self-reference follows its item; with an empty-matching item the
        // automaton still terminates (each expansion is visited once).
        if (!(g.repetition_loop[r] && s == static_cast<int32_t>(r))) first[r].push_back(s);
        if (!nullable[s]) break;
      }
  // Iterative depth-first search: a rule deep in a long chain must not overflow the C++ stack.
  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> color(n, kWhite);
  std::vector<std::pair<int32_t, size_t>> path;
  for (size_t root = 0; root < n; ++root) {
    if (color[root] != kWhite) continue;
    path.push_back({static_cast<int32_t>(root), 0});
    color[root] = kGrey;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == first[r].size()) {
        color[r] = kBlack;
        path.pop_back();
        continue;
      }
      int32_t s = first[r][next++];
      if (color[s] == kGrey) {
        std::string cycle;
        bool in = false;
        std::string last;
        for (auto& [q, unused] : path) {
          if (q == s) in = true;
          if (in && g.names[q] != last) {
            cycle += (cycle.empty() ? "" : " -> ") + g.names[q];
            last = g.names[q];
          }
        }
        if (g.names[s] != last || cycle.find(" -> ") == std::string::npos)
          cycle += " -> " + g.names[s];
        throw GrammarError("GBNF line " + std::to_string(g.lines[s]) + ": rule '" + g.names[s] +
                           "' is left-recursive (" + cycle +
                           " without consuming input); rewrite it with repetition, e.g. "
                           "'expr ::= term (\"+\" term)*'");
      }
      if (color[s] == kWhite) {
        color[s] = kGrey;
        path.push_back({s, 0});
      }
    }
  }
}

}  // namespace sandwich::engine::grammar
