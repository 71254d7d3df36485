#pragma once
// GBNF for JSON text, shared by the JSON Schema and regex converters: the primitive values,
// bounded whitespace, and string contents written the way JSON writes them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/codepoint_set.h"
#include "grammar/gbnf_rules.h"

namespace sandwich::engine::grammar {

// Optional whitespace between tokens, as llama.cpp's converter allows it: one space, or a newline
// and up to 20 blanks (json.dump(2) indents nest 10 levels deep). Bounded, so that a model cannot
// loop in whitespace.
std::string json_space(GbnfRules& r);

// Numbers have at most 18 integer digits, 17 fraction digits and a 2-digit exponent (llama.cpp
// bounds them too): a model cannot write digits forever, and every number it writes parses (as
// an int64 when it has no fraction) and fits a double.
inline constexpr int kMaxIntegerDigits = 18;
std::string json_unsigned_number_body();  // the number without its sign or space

// Each of these is followed by `space`.
std::string json_value(GbnfRules& r);   // any JSON value
std::string json_object(GbnfRules& r);  // any object
std::string json_array(GbnfRules& r);   // any array
std::string json_string(GbnfRules& r);  // any string
std::string json_number(GbnfRules& r);
std::string json_integer(GbnfRules& r);
std::string json_boolean(GbnfRules& r);
std::string json_null(GbnfRules& r);

// One character of a string's contents, in any of JSON's spellings (raw, \n, \u00e9, a
// surrogate pair): one code point, as minLength/maxLength count them.
std::string json_char(GbnfRules& r);

// One code point of `set` inside a string, spelled the one way nlohmann::json::dump() writes it
// (raw; \" \\ \b \f \n \r \t; \u00XX for other control characters, either case). For patterns
// and formats: the value is constrained, its spelling canonical.
std::string json_string_chars(GbnfRules& r, const CodepointSet& set);

// A string (followed by space) whose value is none of `excluded` (UTF-8): the keys of
// additionalProperties, which must not repeat a declared property in any spelling.
std::string json_string_except(GbnfRules& r, const std::vector<std::string>& excluded);

// Exactly this value as dump() writes it, followed by space (enum and const values).
std::string json_literal(GbnfRules& r, const nlohmann::json& v, int depth = 0);

}  // namespace sandwich::engine::grammar
