// JSON Schema to GBNF: the schemas of tests/data/json_schemas (what users write), each compiled
// and run over its valid and invalid instances, the data itself checked by valijson; the errors a
// user reads for what is not supported; hostile schemas fail fast.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "engine/text/tokenizer.h"
#include "grammar/json_schema_to_gbnf.h"
#include "json_schema_check.h"
#include "test_data.h"

namespace sandwich::engine::grammar {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::filesystem::path schema_dir() {
  return test::source_dir() / "tests" / "data" / "json_schemas";
}

std::shared_ptr<const Grammar> compile(const json& schema) {
  const std::string gbnf = gbnf_from_json_schema(schema);
  try {
    return Grammar::parse(gbnf);
  } catch (const GrammarError& e) {
    ADD_FAILURE() << e.what() << "\n" << gbnf;
    throw;
  }
}

std::string error_of(const json& schema) {
  try {
    gbnf_from_json_schema(schema);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "no error";
}

TEST(GrammarSchema, DataFilesHoldFortySchemas) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(schema_dir()))
    n += e.path().extension() == ".json";
  EXPECT_GE(n, 40);
}

// Each file: the grammar compiles; valid instances (compact and as dump(2) indents them) are
// sentences, invalid ones are not.
TEST(GrammarSchema, EveryDataSchemaAcceptsItsValidAndRejectsItsInvalidInstances) {
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir())) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const ordered_json file = ordered_json::parse(test::slurp(entry.path()));
    const json schema = json::parse(file["schema"].dump());
    const auto grammar = compile(schema);
    for (const auto& v : file["valid"]) {
      EXPECT_TRUE(grammar->accepts(v.dump())) << v.dump() << "\n" << gbnf_from_json_schema(schema);
      EXPECT_TRUE(grammar->accepts(v.dump(2))) << v.dump(2);
    }
    for (const auto& v : file["invalid"]) {
      EXPECT_FALSE(grammar->accepts(v.dump())) << v.dump();
      EXPECT_FALSE(grammar->accepts(v.dump(2))) << v.dump(2);
    }
    for (const auto& t : file.value("invalid_text", ordered_json::array()))
      EXPECT_FALSE(grammar->accepts(t.get<std::string>())) << t.get<std::string>();
    for (const auto& v : file.value("rejected_by_grammar", ordered_json::array()))
      EXPECT_FALSE(grammar->accepts(v.dump())) << v.dump();
  }
}

// The grammars work token by token too: each schema's first valid instance, as the Llama-3
// tokenizer splits it, goes through a matcher over the real 128k vocabulary (the sampled token
// allowed at every step, the end token only at the end).
TEST(GrammarSchema, DataSchemasReplayThroughAMatcherOverLlama3) {
  const auto tok = load_tokenizer(test::data_dir() / "tokenizers/llama3/tokenizer.model");
  const auto vocab = std::make_shared<const TokenVocabulary>(*tok);
  const int32_t eos = tok->eos_id();
  std::vector<float> logits(tok->vocab_size());
  int masks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir())) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const ordered_json file = ordered_json::parse(test::slurp(entry.path()));
    if (file["valid"].empty()) continue;
    const std::string text = file["valid"][0].dump(2);
    const auto automaton =
        std::make_shared<GrammarAutomaton>(compile(json::parse(file["schema"].dump())), vocab);
    GrammarMatcher m(automaton, {eos});
    int step = 0;
    for (int32_t t : tok->encode(text, false)) {
      if (step++ % 2 == 0) {  // a full mask every other token; allows() for all
        std::fill(logits.begin(), logits.end(), 0.5f);
        m.mask_logits(logits.data(), tok->vocab_size());
        ++masks;
        ASSERT_EQ(logits[t], 0.5f) << "token " << t << " of " << text;
      }
      ASSERT_TRUE(m.allows(t)) << "token " << t << " of " << text;
      EXPECT_FALSE(m.allows(eos) && !m.can_end());
      m.accept(t);
    }
    EXPECT_TRUE(m.can_end()) << text;
    EXPECT_TRUE(m.allows(eos));
  }
  EXPECT_GT(masks, 100);
}

// What a model with random weights does: any allowed token, at random. Every walk that ends
// (within 300 tokens) is JSON that satisfies its schema (valijson); numbers stay parseable.
TEST(GrammarSchema, RandomWalksThroughEveryDataSchemaValidate) {
  if (!test::kHaveJsonSchemaCheck) GTEST_SKIP() << "valijson is not installed";
  const auto tok = load_tokenizer(test::data_dir() / "tokenizers/llama3/tokenizer.model");
  const auto vocab = std::make_shared<const TokenVocabulary>(*tok);
  const int32_t eos = tok->eos_id(), n = tok->vocab_size();
  std::vector<float> logits(n);
  std::mt19937 rng(2026);
  int ended = 0, walks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir())) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const json file = json::parse(test::slurp(entry.path()));
    GrammarMatcher m(std::make_shared<GrammarAutomaton>(compile(file["schema"]), vocab), {eos});
    std::vector<int32_t> ids;
    bool done = false;
    ++walks;
    for (int step = 0; step < 300 && !done; ++step) {
      if (m.can_end() && rng() % 2 == 0) {
        done = true;
        break;
      }
      int32_t pick = -1;
      for (int tries = 0; tries < 20 && pick < 0; ++tries)  // cheap where most tokens fit
        if (const int32_t t = rng() % n; t != eos && m.allows(t)) pick = t;
      if (pick < 0) {  // else draw from the mask
        std::fill(logits.begin(), logits.end(), 0.0f);
        m.mask_logits(logits.data(), n);
        std::vector<int32_t> allowed;
        for (int32_t t = 0; t < n; ++t)
          if (t != eos && !std::isinf(logits[t])) allowed.push_back(t);
        if (allowed.empty()) {
          ASSERT_TRUE(m.can_end()) << "a dead end";
          done = true;
          break;
        }
        pick = allowed[rng() % allowed.size()];
      }
      m.accept(pick);
      ids.push_back(pick);
      done = m.must_end();
    }
    if (!done) continue;
    ++ended;
    const std::string text = tok->decode(ids);
    json value;
    ASSERT_NO_THROW(value = json::parse(text)) << text;
    if (file.value("valijson", true)) {
      EXPECT_EQ(test::json_schema_violations(value, file["schema"]), "") << text;
    }
  }
  EXPECT_GE(ended, walks / 3);
}

// The data is right: valijson agrees on which instances are valid.
TEST(GrammarSchema, ValijsonAgreesWithTheDataFiles) {
  if (!test::kHaveJsonSchemaCheck) GTEST_SKIP() << "valijson is not installed";
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir())) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const json file = json::parse(test::slurp(entry.path()));
    if (!file.value("valijson", true)) continue;
    for (const auto& v : file["valid"])
      EXPECT_EQ(test::json_schema_violations(v, file["schema"]), "") << v.dump();
    for (const auto& v : file.value("rejected_by_grammar", json::array()))
      EXPECT_EQ(test::json_schema_violations(v, file["schema"]), "") << v.dump();
    if (!file.value("valijson_formats", true)) continue;
    for (const auto& v : file["invalid"])
      EXPECT_NE(test::json_schema_violations(v, file["schema"]), "") << v.dump();
  }
}

TEST(GrammarSchema, AnyJsonObject) {
  const auto g = Grammar::parse(gbnf_any_json_object());
  EXPECT_TRUE(g->accepts(R"({})"));
  EXPECT_TRUE(g->accepts(R"({"a": [1, -2.5e3, "x\n\u00e9", null, true, {"b": {}}]})"));
  EXPECT_TRUE(g->accepts(json{{"k", json::array({1, 2})}, {"z", "\x01"}}.dump(2)));
  for (const char* bad :
       {"[]", "1", "\"s\"", "{", "{\"a\":}", "{\"a\":1,}", "{'a':1}", "{\"a\":\"\x01\"}",
        "{\"a\":01}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\x\"}"})
    EXPECT_FALSE(g->accepts(bad)) << bad;
}

// Whitespace is bounded: one space, or a newline and at most 20 blanks.
TEST(GrammarSchema, WhitespaceIsBounded) {
  const auto g = compile(json{{"type", "array"}});
  EXPECT_TRUE(g->accepts("[\n" + std::string(20, ' ') + "1]"));
  EXPECT_FALSE(g->accepts("[\n" + std::string(21, ' ') + "1]"));
  EXPECT_FALSE(g->accepts("[  1]"));
  EXPECT_FALSE(g->accepts("[\n\n1]"));
}

// Strings are valid JSON: escapes, no raw control characters, surrogates only in pairs.
TEST(GrammarSchema, StringsAreValidJson) {
  const auto g = compile(json{{"type", "string"}});
  for (const char* ok : {R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\uD83D\uDE00")",
                         "\"\xc3\xa9\xf0\x9f\x98\x80\"", "\"\x7f\""})
    EXPECT_TRUE(g->accepts(ok)) << ok;
  for (const char* bad : {"\"\n\"", "\"\t\"", R"("\a")", R"("\u12")", R"("\ud83d")",
                          R"("\ude00\ud83d")", "\"\\\"", "\"abc"})
    EXPECT_FALSE(g->accepts(bad)) << bad;
}

TEST(GrammarSchema, NumbersAreValidJson) {
  const auto num = compile(json{{"type", "number"}});
  for (const char* ok : {"0", "-0", "1.5", "-12e+3", "1E-7", "10.25e2"})
    EXPECT_TRUE(num->accepts(ok)) << ok;
  for (const char* bad : {"01", "+1", "1.", ".5", "1e", "-", "0x1", "NaN", "Infinity", "1.5.2"})
    EXPECT_FALSE(num->accepts(bad)) << bad;
  // Bounded digits: every number parses, integers as int64 (a random model stops writing them).
  EXPECT_TRUE(num->accepts("-123456789012345678.12345678901234567e-99"));
  for (const char* bad : {"1234567890123456789", "0.123456789012345678", "1e100", "1e-100"})
    EXPECT_FALSE(num->accepts(bad)) << bad;
  const auto integer = compile(json{{"type", "integer"}});
  EXPECT_TRUE(integer->accepts("-999999999999999999"));
  EXPECT_FALSE(integer->accepts("-1000000000000000000"));
  const auto above_big = compile(json{{"type", "integer"}, {"minimum", 5}});
  EXPECT_TRUE(above_big->accepts("999999999999999999"));
  EXPECT_FALSE(above_big->accepts("1000000000000000000"));
  EXPECT_TRUE(integer->accepts("-42"));
  EXPECT_FALSE(integer->accepts("4.0"));  // stricter than JSON Schema, as peers: no fraction
  EXPECT_FALSE(integer->accepts("1e3"));
}

// A schema's pattern constrains the string's value (escapes decoded) and, unanchored, matches
// anywhere: the grammar agrees with std::regex_search on random strings with quotes, backslashes
// and control characters in them.
TEST(GrammarSchema, PatternsAgreeWithStdRegexSearchOnTheDecodedValue) {
  const std::vector<std::pair<const char*, const char*>> patterns = {
      {"a\\\"", "a\\\"b"},    {"^[^a]+$", "a\\\"\n"}, {"\\s\\d", " \t\n1"},
      {"^(a|\"\")*$", "a\""}, {"x$", "x\\y"},         {"^.\\W", "\n.\\a"},
  };
  std::mt19937 rng(99);
  for (const auto& [pattern, alphabet] : patterns) {
    SCOPED_TRACE(pattern);
    const std::regex re(pattern, std::regex::ECMAScript);
    const auto g = compile(json{{"type", "string"}, {"pattern", pattern}});
    const std::string abc = alphabet;
    int matches = 0;
    for (int i = 0; i < 300; ++i) {
      std::string v;
      for (int k = rng() % 7; k > 0; --k) v += abc[rng() % abc.size()];
      const bool expected = std::regex_search(v, re);
      matches += expected;
      EXPECT_EQ(g->accepts(json(v).dump()), expected) << json(v).dump();
    }
    EXPECT_GT(matches, 0);
  }
}

// Integer ranges, exhaustively on small ones and at the edges of large ones.
TEST(GrammarSchema, IntegerRangesAreExact) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 0}, {0, 9}, {1, 100}, {-5, 5}, {-123, -45}, {7, 7}, {15, 23}, {99, 1001}, {-1000, 999}};
  for (const auto& [lo, hi] : ranges) {
    SCOPED_TRACE(std::to_string(lo) + ".." + std::to_string(hi));
    const auto g = compile(json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}});
    for (int64_t v = lo - 30; v <= hi + 30; ++v)
      EXPECT_EQ(g->accepts(std::to_string(v)), v >= lo && v <= hi) << v;
    EXPECT_FALSE(g->accepts("-0"));
    EXPECT_FALSE(g->accepts("00"));
  }
  const auto big = compile(
      json{{"type", "integer"}, {"minimum", -9007199254740991LL}, {"maximum", 9007199254740991LL}});
  EXPECT_TRUE(big->accepts("9007199254740991"));
  EXPECT_TRUE(big->accepts("-9007199254740991"));
  EXPECT_FALSE(big->accepts("9007199254740992"));
  EXPECT_FALSE(big->accepts("-9007199254740992"));
  const auto above = compile(json{{"type", "integer"}, {"minimum", 250}});
  for (int64_t v : {250, 251, 299, 300, 999, 1000, 123456789})
    EXPECT_TRUE(above->accepts(std::to_string(v)));
  for (int64_t v : {249, 99, 0, -250}) EXPECT_FALSE(above->accepts(std::to_string(v)));
  const auto below = compile(json{{"type", "integer"}, {"exclusiveMaximum", -3}});
  for (int64_t v : {-4, -10, -999999}) EXPECT_TRUE(below->accepts(std::to_string(v)));
  for (int64_t v : {-3, -2, 0, 5}) EXPECT_FALSE(below->accepts(std::to_string(v)));
}

// Numbers between whole-number bounds are exact (written without an exponent): a grid of
// decimals against the bounds, for inclusive, exclusive and one-sided ones.
TEST(GrammarSchema, NumberRangesWithWholeBoundsAreExact) {
  struct Bounds {
    const char* schema;
    double lo, hi;
    bool lo_excl, hi_excl;
  };
  const double inf = 1e9;
  const std::vector<Bounds> cases = {
      {R"({"type": "number", "minimum": 0, "maximum": 1})", 0, 1, false, false},
      {R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})", 0, 1, true, false},
      {R"({"type": "number", "minimum": -1, "exclusiveMaximum": 2})", -1, 2, false, true},
      {R"({"type": "number", "exclusiveMinimum": -3, "exclusiveMaximum": -1})", -3, -1, true, true},
      {R"({"type": "number", "maximum": -2})", -inf, -2, false, false},
      {R"({"type": "number", "exclusiveMaximum": 0})", -inf, 0, false, true},
      {R"({"type": "number", "minimum": 2})", 2, inf, false, false},
      {R"({"type": "number", "minimum": 0, "maximum": 0})", 0, 0, false, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.schema);
    const auto g = compile(json::parse(c.schema));
    for (int hundredths = -450; hundredths <= 450; hundredths += 5) {
      const double v = hundredths / 100.0;
      const bool in = (c.lo_excl ? v > c.lo : v >= c.lo) && (c.hi_excl ? v < c.hi : v <= c.hi);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", v);
      std::string text = buf;
      if (text == "-0.00") text = "0.00";
      EXPECT_EQ(g->accepts(text), in) << text;
      if (hundredths % 100 == 0) {  // the whole number, and with ".0"
        const std::string whole = std::to_string(hundredths / 100);
        EXPECT_EQ(g->accepts(whole), in) << whole;
        EXPECT_EQ(g->accepts(whole + ".0"), in) << whole << ".0";
      }
    }
    EXPECT_FALSE(g->accepts("1e0"));
  }
}

// The error names the keyword and the JSON pointer where it is.
TEST(GrammarSchema, UnsupportedKeywordsAreNamedWithTheirPlace) {
  EXPECT_EQ(error_of(json::parse(R"({"properties": {"a": {"not": {"type": "string"}}}})")),
            "JSON Schema at /properties/a: 'not' is not supported");
  EXPECT_EQ(error_of(json::parse(R"({"if": {"type": "string"}, "then": {"minLength": 1}})")),
            "JSON Schema at /: 'if' is not supported");
  EXPECT_EQ(error_of(json::parse(R"({"if": {"type": "string"}})")), "no error");  // no effect
  for (const char* kw : {"patternProperties", "dependentRequired", "contains", "multipleOf",
                         "maxProperties", "propertyNames", "unevaluatedProperties"}) {
    const json s = json{{"type", "object"}, {kw, json::object()}};
    EXPECT_NE(error_of(s).find(std::string("'") + kw + "' is not supported"), std::string::npos)
        << error_of(s);
  }
  EXPECT_NE(
      error_of(json::parse(R"({"items": {"uniqueItems": true}})")).find("at /items: 'uniqueItems'"),
      std::string::npos);
  EXPECT_EQ(error_of(json::parse(R"({"uniqueItems": false, "minProperties": 0})")), "no error");
  EXPECT_NE(error_of(json::parse(R"({"$ref": "other.json#/a"})")).find("external"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"$ref": "#/$defs/missing"})")).find("points to nothing"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"j({"type": "string", "pattern": "(?=a)"})j")).find("lookahead"),
            std::string::npos);
  EXPECT_NE(
      error_of(json::parse(R"j({"type": "string", "pattern": "(a)\\1"})j")).find("backreference"),
      std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"type": "strin"})")).find("unknown type \"strin\""),
            std::string::npos);
  // Annotations and unknown keywords are ignored.
  EXPECT_EQ(error_of(json::parse(R"({"title": "t", "description": "d", "examples": [1],
      "default": 1, "$schema": "x", "$id": "y", "$comment": "c", "deprecated": true,
      "readOnly": true, "x-vendor": 1, "strict": true, "type": "integer"})")),
            "no error");
}

TEST(GrammarSchema, SchemasNoValueSatisfiesAreErrors) {
  EXPECT_NE(error_of(false).find("no value satisfies"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"type": "integer", "minimum": 5, "maximum": 4})"))
                .find("no value satisfies"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})"))
                .find("no value satisfies"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"type": "object", "properties": {"a": false},
      "required": ["a"]})"))
                .find("no value satisfies"),
            std::string::npos);
  // An optional property no value satisfies is left out; an anyOf branch is dropped.
  const auto g = compile(json::parse(R"({"type": "object", "properties": {"a": false, "b":
      {"type": "integer"}}, "anyOf": [{"required": ["b"]}, {"type": "string"}]})"));
  EXPECT_TRUE(g->accepts(R"({"b":1})"));
  EXPECT_FALSE(g->accepts(R"({"a":1,"b":1})"));
  EXPECT_FALSE(g->accepts(R"({})"));
}

// The default (what requests get) and JSON Schema's own reading differ on schemas without a
// type, additionalProperties left out, and property order.
TEST(GrammarSchema, FaithfulReadingDiffersWhereDocumented) {
  const json s = json::parse(R"({"properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
      "required": ["b"]})");
  const auto peer = Grammar::parse(gbnf_from_json_schema(s));
  const auto faithful = Grammar::parse(gbnf_from_json_schema(s, {.faithful = true}));
  EXPECT_TRUE(peer->accepts(R"({"b":1,"a":"x"})"));  // required first
  EXPECT_FALSE(peer->accepts(R"({"a":"x","b":1})"));
  EXPECT_TRUE(faithful->accepts(R"({"a":"x","b":1})"));  // by name, as dump() writes them
  EXPECT_FALSE(peer->accepts(R"({"b":1,"c":true})"));
  EXPECT_TRUE(faithful->accepts(R"({"a":"x","aa":[],"b":1,"c":true})"));
  EXPECT_FALSE(peer->accepts("\"not an object\""));
  EXPECT_TRUE(faithful->accepts("\"not an object\""));
  // Draft 7 ignores keywords beside $ref; later drafts apply them.
  const json r = json::parse(R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n",
      "minimum": 5})");
  EXPECT_FALSE(Grammar::parse(gbnf_from_json_schema(r))->accepts("3"));
  EXPECT_TRUE(
      Grammar::parse(gbnf_from_json_schema(r, {.ref_overrides_siblings = true}))->accepts("3"));
}

// Counts past what is expanded: a maximum becomes unbounded, a minimum is refused.
TEST(GrammarSchema, LargeCountsAreBounded) {
  const auto g = compile(json::parse(R"({"type": "string", "maxLength": 1000000})"));
  EXPECT_TRUE(g->accepts("\"" + std::string(2000, 'a') + "\""));
  EXPECT_NE(error_of(json::parse(R"({"type": "array", "minItems": 1000000000})")).find("minItems"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"type": "string", "minLength": 1e12})")).find("minLength"),
            std::string::npos);
}

// Hostile schemas: errors, fast (each well under a second).
TEST(GrammarSchema, HostileSchemasFailFast) {
  const auto start = std::chrono::steady_clock::now();
  json deep = json{{"type", "integer"}};
  for (int i = 0; i < 500; ++i) deep = json{{"type", "array"}, {"items", deep}};
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"$ref": "#"})")).find("comes back to itself"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf":
      [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})"))
                .find("comes back to itself"),
            std::string::npos);
  EXPECT_NE(error_of(json::parse(R"({"allOf": [{"$ref": "#"}]})")), "no error");
  // A DAG that doubles at every level through allOf (no $ref cache can share it).
  json defs = json::object();
  for (int i = 0; i < 40; ++i) {
    const std::string next = "#/$defs/d" + std::to_string(i + 1);
    defs["d" + std::to_string(i)] =
        json{{"allOf", json::array({json{{"$ref", next}}, json{{"$ref", next}}})}};
  }
  defs["d40"] = json{{"type", "integer"}};
  EXPECT_NE(error_of(json{{"$defs", defs}, {"$ref", "#/$defs/d0"}}), "no error");
  json nested_value = 1;
  for (int i = 0; i < 1000; ++i) nested_value = json::array({nested_value});
  EXPECT_NE(error_of(json{{"const", nested_value}}).find("nested over 128"), std::string::npos);
  // A huge enum passes the grammar's size bound.
  json big = json::array();
  for (int i = 0; i < 200000; ++i) big.push_back("value number " + std::to_string(i));
  EXPECT_NE(error_of(json{{"enum", big}}).find("MiB"), std::string::npos);
  // anyOf inside allOf multiplies.
  json parts = json::array();
  for (int i = 0; i < 4; ++i) {
    json alts = json::array();
    for (int k = 0; k < 10; ++k) alts.push_back(json{{"const", k + 10 * i}});
    parts.push_back(json{{"anyOf", alts}});
  }
  EXPECT_NE(error_of(json{{"allOf", parts}}).find("alternatives"), std::string::npos);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A hang would take far longer; a loaded CI machine, not much; the sanitizers, a few times.
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 30.0);
#else
  EXPECT_LT(seconds, 5.0);
#endif
}

}  // namespace
}  // namespace sandwich::engine::grammar
