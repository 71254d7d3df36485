#pragma once
// llama.cpp's GBNF: text to byte-level rules. Throws GrammarError naming the line.
#include <string_view>

#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar {

// Limits that keep a hostile grammar from taking the memory or the stack.
inline constexpr int kMaxRepetition = 10000;      // n in x{m,n}
inline constexpr size_t kMaxElements = 1u << 20;  // all rules' elements together
inline constexpr int kMaxGroupNesting = 256;      // ( ( ( ... ) ) )

Grammar::Impl parse_gbnf(std::string_view text, std::string_view root);

}  // namespace sandwich::engine::grammar
