#pragma once
// The compiled form of a grammar (Grammar::Impl): rules over bytes. Each rule is a list of
// alternatives; each alternative a sequence of elements stored back to back in one array and
// ended by an End element, so a grammar position is one index into that array.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"
#include "grammar/byte_set.h"

namespace sandwich::engine::grammar {

struct Element {
  enum class Kind : uint8_t { End, Terminal, RuleRef };
  Kind kind = Kind::End;
  int32_t value = 0;  // terminal index or rule index
};

struct Grammar::Impl {
  std::vector<Element> elements;
  std::vector<ByteSet> terminals;
  // Per rule: the positions where its alternatives start.
  std::vector<std::vector<int32_t>> alternatives;
  // Per rule: its GBNF name ("value", or "value/3" for a part the compiler made of rule value)
  // and the line where it is defined, for messages.
  std::vector<std::string> names;
  std::vector<int32_t> lines;
  // Per rule: whether it is a repetition loop the compiler made (R ::= x R | ""), whose
  // self-reference is not left recursion even when x matches the empty string.
  std::vector<bool> repetition_loop;
  int32_t root = -1;
};

}  // namespace sandwich::engine::grammar
