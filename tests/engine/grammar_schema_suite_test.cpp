// The official JSON-Schema-Test-Suite (Debian json-schema-test-suite) against the converter in its
// faithful reading: every valid instance of a schema it compiles is a sentence of the grammar;
// a schema with a keyword it does not support is a GrammarError, never a crash. Where the grammar
// is knowingly looser (numbers' bounds, oneOf's exclusivity) invalid instances it accepts are
// counted and listed, not failed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "grammar/json_schema_to_gbnf.h"
#include "test_data.h"

namespace sandwich::engine::grammar {
namespace {

using nlohmann::json;

std::filesystem::path suite_dir() {
  const char* env = std::getenv("SANDWICH_JSON_SCHEMA_TEST_SUITE");
  return env && *env ? env : "/usr/share/json-schema-test-suite/tests";
}

// A "$ref" to another document (or relative to an "$id"), anywhere in the schema.
bool has_external_ref(const json& s) {
  if (s.is_object())
    for (const auto& [k, v] : s.items())
      if ((k == "$ref" && v.is_string() && v.get<std::string>().rfind('#', 0) != 0) ||
          has_external_ref(v))
        return true;
  if (s.is_array())
    for (const auto& v : s)
      if (has_external_ref(v)) return true;
  return false;
}

// Keywords the converter refuses, found where a schema can hold them (not inside enum, const or
// unreferenced definitions).
// lone_if: whether an "if" without "then" or "else" beside it counts (allOf may bring them; alone
// it has no effect, and the converter ignores it).
bool uses_unsupported(const json& s, bool lone_if = true) {
  static const std::set<std::string> unsupported = {"patternProperties", "not",
                                                    "dependentRequired", "dependentSchemas",
                                                    "dependencies",      "contains",
                                                    "multipleOf",        "maxProperties",
                                                    "propertyNames",     "unevaluatedProperties",
                                                    "unevaluatedItems",  "if"};
  if (!s.is_object()) return false;
  for (const auto& [k, v] : s.items()) {
    if (unsupported.count(k) && (k != "if" || lone_if || s.contains("then") || s.contains("else")))
      return true;
    if ((k == "definitions" || k == "$defs") && has_external_ref(v)) return true;
    if (k == "$ref" && has_external_ref(s)) return true;
    if (k == "uniqueItems" && v == true) return true;
    if (k == "minProperties" && v.is_number() && v.get<double>() > 0) return true;
    if (k == "properties" && v.is_object())
      for (const auto& [_, p] : v.items())
        if (uses_unsupported(p, lone_if)) return true;
    if ((k == "items" || k == "prefixItems" || k == "anyOf" || k == "allOf" || k == "oneOf") &&
        v.is_array())
      for (const auto& p : v)
        if (uses_unsupported(p, lone_if)) return true;
    if ((k == "items" || k == "additionalProperties" || k == "additionalItems") && v.is_object() &&
        uses_unsupported(v, lone_if))
      return true;
  }
  return false;
}

// A float with no fraction (1.0): JSON Schema counts it an integer and equal to 1; the grammar
// writes integers without a fraction, so such instances are knowingly refused.
bool has_integral_float(const json& v) {
  if (v.is_number_float()) return std::nearbyint(v.get<double>()) == v.get<double>();
  if (v.is_structured())
    for (const auto& x : v)
      if (has_integral_float(x)) return true;
  return false;
}

void run_draft(const std::string& draft, bool ref_overrides_siblings) {
  const auto dir = suite_dir() / draft;
  if (!std::filesystem::is_directory(dir))
    GTEST_SKIP() << dir << " is missing (Debian package json-schema-test-suite, or set "
                 << "SANDWICH_JSON_SCHEMA_TEST_SUITE)";
  int groups = 0, compiled = 0, refused = 0, valid_ok = 0, invalid_ok = 0;
  int integral_float = 0;
  std::vector<std::string> looser, refusals;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string file = entry.path().filename().string();
    for (const auto& group : json::parse(test::slurp(entry.path()))) {
      ++groups;
      const std::string where = file + ": " + group["description"].get<std::string>();
      SCOPED_TRACE(where);
      const json& schema = group["schema"];
      std::shared_ptr<const Grammar> g;
      try {
        g = Grammar::parse(gbnf_from_json_schema(
            schema, {.faithful = true, .ref_overrides_siblings = ref_overrides_siblings}));
      } catch (const GrammarError& e) {
        ++refused;
        refusals.push_back(where + " -> " + e.what());
        // Refused without an unsupported keyword: nothing may be valid there.
        if (!uses_unsupported(schema))
          for (const auto& t : group["tests"])
            if (t["valid"] == true && !has_integral_float(t["data"]))
              ADD_FAILURE() << "refused, but " << t["data"].dump() << " is valid: " << e.what();
        continue;
      }
      ++compiled;
      EXPECT_FALSE(uses_unsupported(schema, false))
          << "compiled a schema with an unsupported keyword";
      for (const auto& t : group["tests"]) {
        const bool accepted = g->accepts(t["data"].dump());
        if (t["valid"] == true) {
          if (accepted)
            ++valid_ok;
          else if (has_integral_float(t["data"]))
            ++integral_float;
          else
            ADD_FAILURE() << "valid instance refused: " << t["description"] << ": "
                          << t["data"].dump();
        } else if (!accepted) {
          ++invalid_ok;
        } else {
          looser.push_back(where + " / " + t["description"].get<std::string>() + ": " +
                           t["data"].dump());
        }
      }
    }
  }
  std::cout << draft << ": " << groups << " schemas, " << compiled << " compiled, " << refused
            << " refused (GrammarError); valid instances accepted: " << valid_ok
            << ", refused as integral floats (1.0): " << integral_float
            << "; invalid instances rejected: " << invalid_ok
            << ", accepted (looser): " << looser.size() << "\n";
  for (const auto& l : looser) std::cout << "  looser: " << l << "\n";
  if (std::getenv("SANDWICH_LIST_REFUSALS"))
    for (const auto& r : refusals) std::cout << "  refused: " << r << "\n";
}

TEST(GrammarSchemaSuite, Draft6) {
  run_draft("draft6", true);
}
TEST(GrammarSchemaSuite, Draft7) {
  run_draft("draft7", true);
}
TEST(GrammarSchemaSuite, Draft2020_12) {
  run_draft("draft2020-12", false);
}

}  // namespace
}  // namespace sandwich::engine::grammar
