#include "structured_output.h"

#include <optional>
#include <string>
#include <vector>

#include "api_error.h"
#include "engine/grammar/grammar.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;
namespace grammar = engine::grammar;

// What one field asks for, before it is compiled.
struct Source {
  enum class Kind { Schema, AnyObject, Regex, Choice, Grammar } kind;
  const json* value = nullptr;  // the schema, pattern, choices or GBNF
  std::string param;            // the field, as the client wrote it ("response_format.json_schema")
};

// A schema may come as an object or as its JSON text (vLLM takes both).
json schema_of(const json& v, const std::string& param) {
  if (v.is_object() || v.is_boolean()) return v;
  if (v.is_string()) {
    try {
      json parsed = json::parse(v.get_ref<const std::string&>());
      if (parsed.is_object() || parsed.is_boolean()) return parsed;
    } catch (const json::exception&) {
    }
    bad("'" + param + "' must be a JSON Schema (an object, or its JSON text)", param);
  }
  bad("'" + param + "' must be a JSON Schema object", param);
}

std::string compile(const Source& s) {
  try {
    switch (s.kind) {
      case Source::Kind::Schema:
        return grammar::gbnf_from_json_schema(schema_of(*s.value, s.param));
      case Source::Kind::AnyObject:
        return grammar::gbnf_any_json_object();
      case Source::Kind::Regex:
        if (!s.value->is_string())
          bad("'" + s.param + "' must be a regular expression string", s.param);
        return grammar::gbnf_from_regex(s.value->get_ref<const std::string&>());
      case Source::Kind::Choice: {
        if (!s.value->is_array() || s.value->empty())
          bad("'" + s.param + "' must be a non-empty list of strings", s.param);
        std::vector<std::string> choices;
        for (const json& c : *s.value) {
          if (!c.is_string()) bad("'" + s.param + "' must be a non-empty list of strings", s.param);
          choices.push_back(c.get<std::string>());
        }
        return grammar::gbnf_from_choices(choices);
      }
      case Source::Kind::Grammar:
        if (!s.value->is_string() || s.value->get_ref<const std::string&>().empty())
          bad("'" + s.param + "' must be a GBNF grammar (a non-empty string)", s.param);
        return s.value->get<std::string>();
    }
  } catch (const grammar::GrammarError& e) {
    bad("'" + s.param + "': " + e.what(), s.param);
  }
  return {};
}

// response_format: text (nothing), json_object (any object; llama-server's own "schema" member
// narrows it), json_schema ({"name", "schema", "strict"}).
void from_response_format(const Fields& top, std::vector<Source>& out) {
  const char* p = "response_format";
  if (!top.get(p)->is_object()) bad("'response_format' must be an object with a 'type'", p);
  const Fields& f = top.object(p);
  const std::optional<std::string> type = f.string("type");
  if (!type) bad("'response_format' needs a 'type': text, json_object or json_schema", p);
  if (*type == "text") return;
  if (*type == "json_object") {
    if (const json* schema = f.get("schema"))
      out.push_back({Source::Kind::Schema, schema, "response_format.schema"});
    else
      out.push_back({Source::Kind::AnyObject, nullptr, p});
    return;
  }
  if (*type == "json_schema") {
    const json* js = f.get("json_schema");
    if (!js || !js->is_object())
      bad("'response_format' of type json_schema needs a 'json_schema' object", p);
    const Fields& jf = f.object("json_schema");
    jf.string("name");
    jf.string("description");
    jf.boolean("strict", false);  // our output always follows the schema
    const json* schema = jf.get("schema");
    if (!schema)
      bad("'response_format.json_schema' needs a 'schema'", "response_format.json_schema");
    out.push_back({Source::Kind::Schema, schema, "response_format.json_schema.schema"});
    return;
  }
  bad("'response_format' type '" + *type + "' is not one of text, json_object, json_schema", p);
}

// vLLM's structured_outputs: {json | regex | choice | grammar | json_object}.
void from_structured_outputs(const Fields& top, std::vector<Source>& out) {
  const char* p = "structured_outputs";
  if (!top.get(p)->is_object()) bad("'structured_outputs' must be an object", p);
  const Fields& f = top.object(p);
  if (const json* v = f.get("json"))
    out.push_back({Source::Kind::Schema, v, "structured_outputs.json"});
  if (const json* v = f.get("regex"))
    out.push_back({Source::Kind::Regex, v, "structured_outputs.regex"});
  if (const json* v = f.get("choice"))
    out.push_back({Source::Kind::Choice, v, "structured_outputs.choice"});
  if (const json* v = f.get("grammar"))
    out.push_back({Source::Kind::Grammar, v, "structured_outputs.grammar"});
  if (f.boolean("json_object", false))
    out.push_back({Source::Kind::AnyObject, nullptr, "structured_outputs.json_object"});
  for (const char* k : {"structural_tag", "whitespace_pattern"})
    if (f.get(k))
      bad(std::string("'structured_outputs.") + k + "' is not supported by this server", p);
  f.boolean("disable_any_whitespace", false);
  f.boolean("disable_additional_properties", false);
  f.boolean("disable_fallback", false);
}

}  // namespace

void parse_structured_output(const Fields& f, GenerateRequest& r) {
  std::vector<Source> sources;
  if (f.get("response_format")) from_response_format(f, sources);
  if (f.get("structured_outputs")) from_structured_outputs(f, sources);
  if (const json* v = f.get("guided_json"))
    sources.push_back({Source::Kind::Schema, v, "guided_json"});
  if (const json* v = f.get("guided_regex"))
    sources.push_back({Source::Kind::Regex, v, "guided_regex"});
  if (const json* v = f.get("guided_choice"))
    sources.push_back({Source::Kind::Choice, v, "guided_choice"});
  if (const json* v = f.get("guided_grammar"))
    sources.push_back({Source::Kind::Grammar, v, "guided_grammar"});
  if (const json* v = f.get("json_schema"))
    sources.push_back({Source::Kind::Schema, v, "json_schema"});
  if (const json* v = f.get("grammar")) sources.push_back({Source::Kind::Grammar, v, "grammar"});
  // Which engine runs the grammar is ours to choose; the names are only checked.
  f.string("guided_decoding_backend");
  if (f.get("guided_whitespace_pattern"))
    bad("'guided_whitespace_pattern' is not supported by this server", "guided_whitespace_pattern");
  if (sources.empty()) return;
  if (sources.size() > 1)
    bad("structured output is asked for twice ('" + sources[0].param + "' and '" +
            sources[1].param + "'); give one of them",
        sources[1].param);
  r.grammar = compile(sources[0]);
  r.grammar_param = sources[0].param;
}

}  // namespace sandwich::server
