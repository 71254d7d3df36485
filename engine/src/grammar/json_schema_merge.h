#pragma once
// allOf as one schema, so that the converter writes one grammar for all the parts.
#include <string>

#include <nlohmann/json.hpp>

namespace sandwich::engine::grammar {

// The schema whose instances satisfy both a and b: the tighter of two bounds, the intersection of
// types and enums, required names together, properties merged one by one (a key declared on one
// side meets the other side's additionalProperties), anyOf x anyOf as pairs. Both are object
// schemas without "$ref" or "allOf" at the top (the caller resolves those first). A conflict
// leaves an empty "type" or "enum": no value satisfies it. Throws GrammarError (naming `where`)
// for what cannot be combined (two different patterns, too many anyOf pairs).
nlohmann::json merge_schemas(const nlohmann::json& a, const nlohmann::json& b,
                             const std::string& where);

// Keywords that describe a schema without constraining it (title, description, $comment...).
bool is_annotation(const std::string& keyword);

}  // namespace sandwich::engine::grammar
