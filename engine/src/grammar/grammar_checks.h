#pragma once
// Checks of compiled rules that llama.cpp makes too: no rule may reach itself without consuming a
// byte (left recursion, direct or through other rules or empty-matching elements).
#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar {

// Throws GrammarError naming the rule and its line.
void check_left_recursion(const Grammar::Impl& g);

}  // namespace sandwich::engine::grammar
