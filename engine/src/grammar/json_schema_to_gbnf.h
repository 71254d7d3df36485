#pragma once
// The JSON Schema converter's options beyond the public gbnf_from_json_schema(schema).
#include <string>

#include <nlohmann/json.hpp>

namespace sandwich::engine::grammar {

struct JsonSchemaOptions {
  // false (what requests get): as llama.cpp and vLLM (xgrammar) read a schema for generation: a
  // schema without "type" is the type its keywords imply ("properties": an object), an object
  // with "properties" and no "additionalProperties" takes no other keys, and properties come in
  // the order of "required", then the optional ones by name.
  // true: JSON Schema's own reading, for its test suite: every type a schema does not rule out,
  // undeclared keys allowed unless additionalProperties says otherwise (anywhere between the
  // declared ones), and all properties in name order (nlohmann::json's and dump()'s order).
  bool faithful = false;
  // Draft 7 and before: keywords beside "$ref" are ignored. Later drafts apply them too.
  bool ref_overrides_siblings = false;
};

std::string gbnf_from_json_schema(const nlohmann::json& schema, const JsonSchemaOptions& options);

}  // namespace sandwich::engine::grammar
