// GBNF as llama.cpp reads it: the parser's errors and Grammar::accepts on grammars of the kind
// llama.cpp ships (json, arithmetic, list, CSV lines, Unicode classes).
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/grammar.h"
#include "test_data.h"

namespace sandwich::engine::grammar {
namespace {

std::string error_of(std::string_view gbnf) {
  try {
    Grammar::parse(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "no error";
}

bool accepts(std::string_view gbnf, std::string_view text) {
  return Grammar::parse(gbnf)->accepts(text);
}

// llama.cpp's grammars/json.gbnf as published (plain integers only).
std::string json_gbnf() {
  return test::slurp(test::source_dir() / "tests/data/grammars/json.gbnf");
}

constexpr std::string_view kArithmetic = R"g(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)g";

constexpr std::string_view kList = R"g(root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g";

constexpr std::string_view kCsvLine = R"g(root   ::= field ("," field)* "\r"? "\n"
field  ::= quoted | plain
plain  ::= [^,"\r\n]*
quoted ::= "\"" ([^"] | "\"\"")* "\""
)g";

TEST(GrammarParser, JsonAcceptsAndRejects) {
  const std::string text = json_gbnf();
  ASSERT_FALSE(text.empty());
  auto g = Grammar::parse(text);
  EXPECT_TRUE(g->accepts(R"g({})g"));
  EXPECT_TRUE(g->accepts(R"g({"a": [1, -2, {"b": true}], "c": "x\"y\u00e9"})g"));
  EXPECT_TRUE(g->accepts("{\"k\":\n\t\"é漢字😀\"}"));
  EXPECT_FALSE(g->accepts(R"g({"a": })g"));
  EXPECT_FALSE(g->accepts(R"g({"a": 1)g"));
  EXPECT_FALSE(g->accepts(R"g([1])g"));  // root is an object
  EXPECT_FALSE(g->accepts("{\"a\": \"\x01\"}"));
  EXPECT_FALSE(g->accepts("{\"a\": \"\xff\"}"));          // not UTF-8
  EXPECT_FALSE(g->accepts("{\"a\": \"\xed\xa0\x80\"}"));  // a surrogate
  EXPECT_FALSE(g->accepts("{\"a\": \"\xc3\"}"));          // a character cut short
  EXPECT_FALSE(g->accepts(""));
}

TEST(GrammarParser, Arithmetic) {
  auto g = Grammar::parse(kArithmetic);
  EXPECT_TRUE(g->accepts("1+2= 3\n"));
  EXPECT_TRUE(g->accepts("(a +b_2)*c = x\ny=1\n"));
  EXPECT_FALSE(g->accepts("1+=3\n"));
  EXPECT_FALSE(g->accepts("1+2=3"));
  EXPECT_FALSE(g->accepts("(1+2=3\n"));
}

TEST(GrammarParser, ListAndCsv) {
  auto list = Grammar::parse(kList);
  EXPECT_TRUE(list->accepts("- one\n- two ✓\n"));
  EXPECT_FALSE(list->accepts("- one\n-two\n"));
  EXPECT_FALSE(list->accepts("- a\u2028b\n"));
  EXPECT_FALSE(list->accepts("- \n"));
  auto csv = Grammar::parse(kCsvLine);
  EXPECT_TRUE(csv->accepts("a,b,,\"c,\"\"d\"\"\"\r\n"));
  EXPECT_TRUE(csv->accepts("\n"));
  EXPECT_FALSE(csv->accepts("a,\"b\n"));
  EXPECT_FALSE(csv->accepts("a,b"));
}

TEST(GrammarParser, SchemaGrammarFromLlamaCppGuide) {
  // What llama.cpp's json_schema_to_grammar.py writes for an array of 10..100 {name, age}
  // (grammars/README.md).
  constexpr std::string_view g =
      R"g(char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
item ::= "{" space item-name-kv "," space item-age-kv "}" space
item-age ::= ([0-9] | ([1-8] [0-9] | [9] [0-9]) | "1" ([0-4] [0-9] | [5] "0")) space
item-age-kv ::= "\"age\"" space ":" space item-age
item-name ::= "\"" char{1,100} "\"" space
item-name-kv ::= "\"name\"" space ":" space item-name
root ::= "[" space item ("," space item){9,99} "]" space
space ::= | " " | "\n" [ \t]{0,20}
)g";
  auto grammar = Grammar::parse(g);
  auto people = [](int n, std::string_view age) {
    std::string s = "[";
    for (int i = 0; i < n; ++i)
      s += std::string(i ? ",\n  " : "") + "{\"name\": \"Actor \\\"" + std::to_string(i) +
           "\\\" é\", \"age\": " + std::string(age) + "}";
    return s + "]";
  };
  EXPECT_TRUE(grammar->accepts(people(10, "42")));
  EXPECT_TRUE(grammar->accepts(people(100, "150")));
  EXPECT_FALSE(grammar->accepts(people(9, "42")));
  EXPECT_FALSE(grammar->accepts(people(101, "42")));
  EXPECT_FALSE(grammar->accepts(people(10, "151")));
  EXPECT_FALSE(grammar->accepts(people(10, "042")));
}

TEST(GrammarParser, UnicodeClassesAndLiterals) {
  constexpr std::string_view jp = R"g(# A probably incorrect grammar for Japanese
root        ::= jp-char+ ([ \t\n] jp-char+)*
jp-char     ::= hiragana | katakana | punctuation | cjk
hiragana    ::= [ぁ-ゟ]
katakana    ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk         ::= [一-鿿]
)g";
  auto g = Grammar::parse(jp);
  EXPECT_TRUE(g->accepts("ひらがな カタカナ、漢字"));
  EXPECT_FALSE(g->accepts("ひらがな latin"));
  EXPECT_FALSE(g->accepts("\xe3\x81"));  // the first two bytes of あ
  EXPECT_TRUE(accepts(R"g(root ::= "é😀\u00e9\U0001F600\x41")g", "é😀é😀A"));
  EXPECT_TRUE(
      accepts(R"g(root ::= "\xff")g", "\xc3\xbf"));  // \xHH is a code point, as in llama.cpp
  EXPECT_TRUE(accepts(R"g(root ::= [^a]*)g", "b😀\xf4\x8f\xbf\xbf"));  // up to U+10FFFF
  EXPECT_FALSE(accepts(R"g(root ::= [^a]*)g", "\xf4\x90\x80\x80"));   // past U+10FFFF
  EXPECT_FALSE(accepts(R"g(root ::= [^a]*)g", "\xc0\x80"));           // overlong
  EXPECT_TRUE(accepts(R"g(root ::= .+)g", "x\xe0\xa0\x80\xef\xbf\xbf"));
  EXPECT_FALSE(accepts(R"g(root ::= .)g", "ab"));
  EXPECT_TRUE(accepts(R"g(root ::= [\x00-\x7f\u0100-\u0101]+)g", "a\xc4\x80\xc4\x81"));
  EXPECT_FALSE(accepts(R"g(root ::= [\x00-\x7f\u0100-\u0101]+)g", "\xc4\x82"));
  EXPECT_TRUE(accepts(R"g(root ::= [\]\[\\-] "\"\t\n\r")g", "]\"\t\n\r"));
  EXPECT_TRUE(accepts(R"g(root ::= [a-] "-")g", "--"));
}

TEST(GrammarParser, RepetitionBounds) {
  constexpr std::string_view g =
      R"g(root ::= "a"{2,4} ("bc"){3} "d"{1,} "e"{0,2} "f"? ("g" | "h")*)g";
  EXPECT_TRUE(accepts(g, "aabcbcbcd"));
  EXPECT_TRUE(accepts(g, "aaaabcbcbcdddeefghhg"));
  EXPECT_FALSE(accepts(g, "abcbcbcd"));
  EXPECT_FALSE(accepts(g, "aaaaabcbcbcd"));
  EXPECT_FALSE(accepts(g, "aabcbcd"));
  EXPECT_FALSE(accepts(g, "aabcbcbc"));
  EXPECT_FALSE(accepts(g, "aabcbcbcdeee"));
  EXPECT_TRUE(accepts(R"g(root ::= "x"{0})g", ""));
  EXPECT_TRUE(accepts(R"g(root ::= [0-9]{ 2 , 3 })g", "123"));
  EXPECT_TRUE(accepts(R"g(root ::= ("a"?)* "b")g", "aab"));  // an empty-matching item repeated
  std::string many(3000, 'z');
  EXPECT_TRUE(accepts(R"g(root ::= "z"{1000,3000})g", many));
  EXPECT_FALSE(accepts(R"g(root ::= "z"{1000,2999})g", many));
}

TEST(GrammarParser, LayoutCommentsNewlines) {
  constexpr std::string_view g =
      "# comment\r\n\r\nroot ::= a   # trailing\r\n"
      "a ::= (\n  \"x\"  # inside\n  | \"y\"\n) b\n"
      "b ::= \"z\" |\n  \"w\"\n";
  EXPECT_TRUE(accepts(g, "xz"));
  EXPECT_TRUE(accepts(g, "yw"));
  EXPECT_FALSE(accepts(g, "x"));
  EXPECT_TRUE(accepts("root ::= start\nstart ::= \"s\"", "s"));
  EXPECT_TRUE(
      accepts("root ::= rule_123 check-mate UPPER\nrule_123 ::= \"a\"\n"
              "check-mate ::= \"b\"\nUPPER ::= \"c\"\n",
              "abc"));
  EXPECT_TRUE(Grammar::parse("start ::= \"s\"\n", "start")->accepts("s"));
}

TEST(GrammarParser, ErrorsNameTheLine) {
  EXPECT_EQ(error_of(""), "GBNF: empty grammar (no rules)");
  EXPECT_EQ(error_of("  # only a comment\n"), "GBNF: empty grammar (no rules)");
  EXPECT_EQ(error_of("a ::= \"x\"\n"), "GBNF: no rule 'root' (the start rule)");
  EXPECT_EQ(error_of("root ::= value\n\nvalue ::= valu\n"), "GBNF line 3: undefined rule 'valu'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"),
            "GBNF line 2: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= \"a\"\nb :: \"x\"\n"),
            "GBNF line 2: expecting '::=' after rule name 'b'");
  EXPECT_EQ(error_of("root ::= \"abc\n\n"), "GBNF line 1: unterminated string literal");
  EXPECT_EQ(error_of("root ::= [a-z\n"), "GBNF line 1: unterminated character class");
  EXPECT_EQ(error_of("root ::= \"a\"\n\nx ::= (\"b\"\n"), "GBNF line 3: unclosed '('");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "GBNF line 1: unknown escape '\\q'");
  EXPECT_EQ(error_of("root ::= \"\\x4\""), "GBNF line 1: expecting 2 hex digits");
  EXPECT_EQ(error_of("root ::= \"\\U00110000\""), "GBNF line 1: code point above U+10FFFF");
  EXPECT_EQ(error_of("root ::= [z-a]"), "GBNF line 1: character range out of order");
  EXPECT_EQ(error_of("root ::= * \"a\""), "GBNF line 1: expecting an item before '*'");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "GBNF line 1: repetition {m,n} with n < m");
  EXPECT_EQ(error_of("root ::= \"a\" )\n"),
            "GBNF line 1: unexpected ')' (expecting newline or end)");
  EXPECT_EQ(error_of("\n\nroot ::= \"a\"{99999}"), "GBNF line 3: repetition count above 10000");
  EXPECT_NE(error_of("root ::= <[1000]>").find("token references"), std::string::npos);
}

TEST(GrammarParser, LeftRecursionIsRefused) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+\n"),
            "GBNF line 2: rule 'expr' is left-recursive (expr -> expr without consuming input); "
            "rewrite it with repetition, e.g. 'expr ::= term (\"+\" term)*'");
  // Indirect, and hidden behind a rule that may match nothing.
  std::string indirect = error_of("root ::= a\na ::= b \"x\"\nb ::= c | \"y\"\nc ::= a \"z\"\n");
  EXPECT_NE(indirect.find("left-recursive (a -> b -> c -> a"), std::string::npos) << indirect;
  std::string hidden = error_of("root ::= a\na ::= opt a \"x\" | \"y\"\nopt ::= \"o\"?\n");
  EXPECT_NE(hidden.find("GBNF line 2: rule 'a' is left-recursive"), std::string::npos) << hidden;
  std::string through_loop = error_of("root ::= a\na ::= (\"b\"? a)* \"c\"\n");
  EXPECT_NE(through_loop.find("left-recursive"), std::string::npos) << through_loop;
  // Right recursion is fine.
  EXPECT_TRUE(accepts("root ::= \"a\" root | \"b\"", "aaab"));
}

TEST(GrammarParser, HostileSizesAreRefused) {
  // Nesting past the parser's bound.
  std::string deep = "root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')');
  EXPECT_NE(error_of(deep).find("nested deeper than 256"), std::string::npos);
  // Many large repetitions: the element budget.
  std::string big = "root ::= x\n";
  for (int i = 0; i < 200; ++i) big += "x" + std::to_string(i) + " ::= \"ab\"{10000}\n";
  big += "x ::= \"q\"\n";
  EXPECT_NE(error_of(big).find("the grammar is too large"), std::string::npos);
  // Nested repetition reuses the item, so it stays small (and cheap to parse).
  auto nested = Grammar::parse(R"g(root ::= (("a"{100}){100}){100} "b")g");
  EXPECT_FALSE(nested->accepts("aaab"));
  EXPECT_TRUE(accepts(R"g(root ::= (("a"{10}){10}){10} "b")g", std::string(1000, 'a') + "b"));
}

}  // namespace
}  // namespace sandwich::engine::grammar
