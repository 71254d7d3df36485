#pragma once
// The regex converter's entry for other converters (JSON Schema's "pattern").
#include <string>
#include <string_view>

#include "grammar/gbnf_rules.h"

namespace sandwich::engine::grammar {

enum class RegexTarget {
  whole_text,   // the whole output matches (vLLM's guided_regex); ^ and $ at the ends are no-ops
  json_string,  // a JSON string's contents between the quotes, as dump() spells them; JSON
                // Schema's search semantics: a side without ^ or $ takes any characters
};

// A GBNF expression (rules added to `r`) for the text `pattern` (ECMAScript syntax) matches.
// Throws GrammarError, prefixed by `where`, naming a construct it cannot compile.
std::string regex_gbnf(GbnfRules& r, std::string_view pattern, RegexTarget target,
                       const std::string& where);

}  // namespace sandwich::engine::grammar
