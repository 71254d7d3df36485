#pragma once
// Writing GBNF text (llama.cpp's format) from code: a set of named rules that converters add to,
// and the quoting of literals and character classes.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/codepoint_set.h"

namespace sandwich::engine::grammar {

// The rules of one grammar being written. Names are unique; two rules with the same body are
// written once. The text a converter may produce is bounded (max_bytes): a hostile schema or
// regex gets a GrammarError instead of a grammar of gigabytes.
class GbnfRules {
 public:
  explicit GbnfRules(std::string what, size_t max_bytes = size_t{4} << 20)
      : what_(std::move(what)), max_bytes_(max_bytes) {}

  // Adds `name_hint ::= body` (the name made unique) and returns the rule's name; an existing
  // rule with the same body is returned instead.
  std::string add(std::string_view name_hint, const std::string& body);
  // A name for a rule defined later (for recursion).
  std::string reserve(std::string_view name_hint);
  void define(const std::string& name, const std::string& body);
  // A rule with a fixed name (one of the JSON primitives listed in gbnf_rules.cpp: "space",
  // "value"...), defined once. add() never gives these names to other rules.
  std::string fixed(const std::string& name, const std::string& body);
  bool has(const std::string& name) const { return bodies_.count(name) != 0; }

  // All the rules, `root ::= root_body` first.
  std::string text(const std::string& root_body) const;
  // Throws GrammarError when the grammar passes the bound.
  void charge(size_t bytes);

 private:
  std::string unique_name(std::string_view hint);

  std::string what_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::vector<std::string> order_;
  std::map<std::string, std::string> bodies_;   // name -> body
  std::map<std::string, std::string> by_body_;  // body -> name
  std::map<std::string, int> used_names_;
};

// "..." holding exactly these bytes (UTF-8 text; control characters escaped).
std::string gbnf_literal(std::string_view utf8);
// [...] matching one code point of the set (empty set: GrammarError is the caller's business).
std::string gbnf_class(const CodepointSet& set);

}  // namespace sandwich::engine::grammar
