// Structured output end to end, on a random-weight model with the real Llama-3 vocabulary
// (128k tokens): every schema of tests/data/json_schemas gives JSON that parses and validates,
// greedy and sampled (n = 4), through every field name clients use; GBNF grammars and regexes
// likewise; what cannot be compiled is a 400 naming the field and the construct.
#include <filesystem>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "engine/grammar/grammar.h"
#include "http_test_client.h"
#include "json_schema_check.h"
#include "llama3_vocab_model.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

class StructuredOutputServing : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const auto model = write_llama3_vocab_model(dir_->path());
    daemon_ = new Daemon("--model " + model.string() + " --served-model-name tiny -t 1");
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete dir_;
  }
  static uint16_t port() { return daemon_->port(); }

  static json chat(const json& extra, int max_tokens = 200) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Give me the JSON."}}}},
                 {"max_tokens", max_tokens}};
    body.update(extra);
    Client c(port());
    auto r = c.post("/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.j() : json();
  }

  static TempDir* dir_;
  static Daemon* daemon_;
};
TempDir* StructuredOutputServing::dir_ = nullptr;
Daemon* StructuredOutputServing::daemon_ = nullptr;

json with(json a, const json& b) {
  a.update(b);
  return a;
}

struct SchemaCase {
  std::string name;
  json schema;
  bool valijson = true;  // false: a schema valijson (draft 7) cannot read; the grammar checks it
};

std::vector<SchemaCase> schema_cases() {
  std::vector<SchemaCase> cases;
  for (const auto& e :
       std::filesystem::directory_iterator(source_dir() / "tests/data/json_schemas"))
    if (e.path().extension() == ".json") {
      const json file = json::parse(slurp(e.path()));
      cases.push_back({e.path().stem().string(), file["schema"], file.value("valijson", true)});
    }
  std::sort(cases.begin(), cases.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return cases;
}

// Each choice's content parses as JSON and validates against the schema (valijson, or where it
// cannot read the schema, the schema's grammar).
void expect_valid(const json& response, const SchemaCase& c, const std::string& what) {
  ASSERT_TRUE(response.contains("choices")) << what;
  for (const json& ch : response["choices"]) {
    const std::string content = ch["message"]["content"].get<std::string>();
    EXPECT_EQ(ch["finish_reason"], "stop") << what << ": " << content;
    json value;
    try {
      value = json::parse(content);
    } catch (const json::exception& e) {
      ADD_FAILURE() << what << ": not JSON (" << e.what() << "): " << content;
      continue;
    }
    if (c.valijson)
      EXPECT_EQ(json_schema_violations(value, c.schema), "") << what << ": " << content;
    else
      EXPECT_TRUE(engine::grammar::Grammar::parse(engine::grammar::gbnf_from_json_schema(c.schema))
                      ->accepts(content))
          << what << ": " << content;
  }
}

// Under the sanitizers a 128k-vocabulary step is several times slower: every schema is still
// decoded greedily there, and every fourth also sampled n = 4 (all of them in the Release suite).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kSampledEvery = 4;
#else
constexpr size_t kSampledEvery = 1;
#endif

TEST_F(StructuredOutputServing, EverySchemaGreedyAndSampled) {
  if (!kHaveJsonSchemaCheck) GTEST_SKIP() << "valijson (libvalijson-dev) is not installed";
  const auto cases = schema_cases();
  ASSERT_GE(cases.size(), 40u);
  // Two clients at a time: constrained sequences share decode steps.
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < cases.size();) {
      const SchemaCase& c = cases[i];
      const json rf = {{"type", "json_schema"},
                       {"json_schema", {{"name", c.name}, {"schema", c.schema}, {"strict", true}}}};
      expect_valid(chat({{"response_format", rf}, {"temperature", 0}}), c, c.name + " greedy");
      if (i % kSampledEvery == 0)
        expect_valid(chat({{"response_format", rf}, {"temperature", 1.0}, {"n", 4}, {"seed", 5}}),
                     c, c.name + " sampled");
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
}

TEST_F(StructuredOutputServing, EveryFieldNameClientsUse) {
  const json schema = {{"type", "object"},
                       {"properties", {{"ok", {{"type", "boolean"}}}}},
                       {"required", {"ok"}},
                       {"additionalProperties", false}};
  for (const json& extra :
       {json{{"guided_json", schema}}, json{{"guided_json", schema.dump()}},
        json{{"structured_outputs", {{"json", schema}}}}, json{{"json_schema", schema}},
        json{{"response_format", {{"type", "json_object"}, {"schema", schema}}}}}) {
    const json r = chat(with(extra, {{"temperature", 0.8}, {"n", 2}}));
    expect_valid(r, {"inline", schema}, extra.dump());
  }
  for (const json& extra : {json{{"response_format", {{"type", "json_object"}}}},
                            json{{"structured_outputs", {{"json_object", true}}}}}) {
    const json r = chat(extra);
    const json v = json::parse(r["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(v.is_object()) << extra.dump();
  }
  for (const json& extra : {json{{"guided_choice", {"red", "green", "blue"}}},
                            json{{"structured_outputs", {{"choice", {"red", "green", "blue"}}}}}}) {
    const json r = chat(with(extra, {{"temperature", 1.0}, {"n", 3}}));
    for (const json& ch : r["choices"]) {
      const std::string s = ch["message"]["content"];
      EXPECT_TRUE(s == "red" || s == "green" || s == "blue") << s;
    }
  }
  // The completions route takes them too.
  Client c(port());
  auto r = c.post(
      "/v1/completions",
      {{"prompt", "Colour:"}, {"max_tokens", 20}, {"guided_regex", "(red|green|blue) [0-9]{2}"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.j()["choices"][0]["text"];
  EXPECT_TRUE(std::regex_match(text, std::regex("(red|green|blue) [0-9]{2}"))) << text;
}

TEST_F(StructuredOutputServing, GbnfGrammarsAndRegexes) {
  const std::vector<std::string> grammars = {
      // arithmetic
      R"g(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")")g",
      // a CSV line of three fields
      R"g(root ::= field "," field "," field "\n"
field ::= [A-Za-z0-9 ]* | "\"" [^"\n]* "\"")g",
      // llama.cpp's JSON, in short
      R"g(root ::= object
value ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20})g",
  };
  for (const std::string& g : grammars) {
    const auto parsed = engine::grammar::Grammar::parse(g);
    for (const char* field : {"grammar", "guided_grammar"}) {
      const json r = chat({{field, g}, {"temperature", 1.0}, {"n", 2}, {"seed", 3}}, 120);
      for (const json& ch : r["choices"]) {
        const std::string s = ch["message"]["content"];
        EXPECT_TRUE(parsed->accepts(s)) << field << " " << g << "\n-> '" << s << "'";
      }
    }
  }
  for (const std::string re : {R"(\d{3}-\d{4})", R"([A-Z][a-z]+ (is|was) (\w+ ){1,3}\w+\.)",
                               R"(https?://[a-z]{3,10}\.(com|org)/[a-z0-9/]{0,20})"}) {
    const json r = chat({{"guided_regex", re}, {"temperature", 1.0}, {"n", 2}}, 80);
    for (const json& ch : r["choices"]) {
      const std::string s = ch["message"]["content"];
      EXPECT_TRUE(std::regex_match(s, std::regex(re))) << re << " -> '" << s << "'";
    }
  }
}

TEST_F(StructuredOutputServing, StreamedOutputIsTheSameSentence) {
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"name", {{"type", "string"}, {"maxLength", 12}}},
                         {"tags", {{"type", "array"}, {"items", {{"enum", {"a", "b"}}}}}}}},
                       {"required", {"name", "tags"}}};
  Client c(port());
  const auto events =
      c.stream("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                        {"guided_json", schema},
                                        {"max_tokens", 100},
                                        {"stream", true}});
  std::string text;
  for (const std::string& e : events)
    if (e != "[DONE]") text += json::parse(e)["choices"][0]["delta"].value("content", "");
  EXPECT_EQ(json_schema_violations(json::parse(text), schema), "") << text;
}

TEST_F(StructuredOutputServing, WhatCannotBeCompiledIsA400NamingIt) {
  Client c(port());
  auto post = [&](const json& extra) {
    json body = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 5}};
    body.update(extra);
    return c.post("/v1/chat/completions", body);
  };
  struct Bad {
    json extra;
    std::string param, says;
  };
  const std::vector<Bad> bad = {
      {{{"guided_json", {{"type", "object"}, {"patternProperties", {{"^a", {}}}}}}},
       "guided_json",
       "patternProperties"},
      {{{"grammar", "root ::= undefined-rule"}}, "grammar", "undefined-rule"},
      {{{"guided_grammar", "root ::= \"a\" | root \"b\""}}, "guided_grammar", "recurs"},
      {{{"guided_regex", "(a)\\1"}}, "guided_regex", ""},
      {{{"guided_choice", json::array()}}, "guided_choice", "non-empty"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format", "xml"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format", "json_schema"},
      {{{"guided_json", "{not json"}}, "guided_json", "JSON Schema"},
      {{{"guided_regex", "a+"}, {"guided_choice", {"a"}}}, "", "twice"},
  };
  for (const Bad& b : bad) {
    auto r = post(b.extra);
    EXPECT_EQ(r.status, 400) << b.extra.dump() << ": " << r.body;
    if (r.status != 400) continue;
    const json e = r.j()["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    if (!b.param.empty()) {
      EXPECT_EQ(e["param"], b.param) << r.body;
    }
    EXPECT_NE(e["message"].get<std::string>().find(b.says), std::string::npos) << r.body;
  }
  // The server is still there.
  EXPECT_EQ(post({{"guided_choice", {"fine"}}}).status, 200);
}

}  // namespace
}  // namespace sandwich::test
