// guided_choice: the output is exactly one of the given strings.
#include <set>

#include "engine/grammar/grammar.h"
#include "grammar/codepoint_set.h"
#include "grammar/gbnf_rules.h"

namespace sandwich::engine::grammar {

std::string gbnf_from_choices(std::span<const std::string> choices) {
  if (choices.empty()) throw GrammarError("choices: the list is empty; give at least one string");
  GbnfRules r("choices");
  std::set<std::string_view> seen;
  std::string body;
  bool empty_choice = false;
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string& c = choices[i];
    for (size_t pos = 0; pos < c.size();)
      next_code_point(c, pos, "choices[" + std::to_string(i) + "]");
    if (!seen.insert(c).second) continue;
    if (c.empty()) {
      empty_choice = true;
      continue;
    }
    std::string lit = gbnf_literal(c);
    r.charge(lit.size() + 3);
    body += (body.empty() ? "" : " | ") + lit;
  }
  if (body.empty()) return r.text("\"\"");
  return r.text(empty_choice ? "(" + body + ")?" : body);
}

}  // namespace sandwich::engine::grammar
