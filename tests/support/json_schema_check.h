#pragma once
// Validating a JSON value against a JSON Schema (draft 7) with valijson, to check what a grammar
// made a model write. Only where CMake found valijson (SANDWICH_HAVE_VALIJSON); tests skip
// without it.
#include <string>

#include <nlohmann/json.hpp>

#ifdef SANDWICH_HAVE_VALIJSON
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#endif

namespace sandwich::test {

inline constexpr bool kHaveJsonSchemaCheck =
#ifdef SANDWICH_HAVE_VALIJSON
    true;
#else
    false;
#endif

// "" when `instance` satisfies `schema`; otherwise what valijson says is wrong ("<root> [a]: ...",
// one line a problem). A schema valijson cannot read is reported the same way.
inline std::string json_schema_violations(const nlohmann::json& instance,
                                          const nlohmann::json& schema) {
#ifdef SANDWICH_HAVE_VALIJSON
  try {
    valijson::Schema s;
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
    parser.populateSchema(schema_adapter, s);
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(instance);
    if (validator.validate(s, target, &results)) return "";
    std::string out;
    for (const auto& e : results) {
      std::string path;
      for (const auto& c : e.context) path += c;
      out += path + ": " + e.description + "\n";
    }
    return out.empty() ? "invalid\n" : out;
  } catch (const std::exception& e) {
    return std::string("valijson: ") + e.what() + "\n";
  }
#else
  (void)instance;
  (void)schema;
  return "valijson is not installed";
#endif
}

}  // namespace sandwich::test
