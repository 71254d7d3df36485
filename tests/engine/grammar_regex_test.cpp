// Regex to GBNF (vLLM's guided_regex: the whole output matches): a table of patterns, a cross-check
// against std::regex (ECMAScript) on random strings, the constructs refused by name, hostile
// patterns failing fast. Also guided_choice.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sandwich::engine::grammar {
namespace {

std::string error_of(std::string_view pattern) {
  try {
    Grammar::parse(gbnf_from_regex(pattern));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "no error";
}

struct Case {
  const char* pattern;
  std::vector<std::string> match, no_match;
};

TEST(GrammarRegex, TableOfPatterns) {
  const std::vector<Case> cases = {
      {"abc", {"abc"}, {"ab", "abcd", ""}},
      {"^abc$", {"abc"}, {"^abc$"}},
      {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
      {"(ab)+c?", {"ab", "ababc"}, {"", "abcab", "c"}},
      {"(?:x|y){2,3}", {"xy", "yyx"}, {"x", "xyxy"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,}", {"aa", "aaaaaaa"}, {"a"}},
      {"a{0,2}b", {"b", "ab", "aab"}, {"aaab"}},
      {"a*?b+?c??", {"b", "aabbc"}, {"ac"}},
      {"[a-c]x[^a-c]", {"axd", "cx-"}, {"axa", "dxd"}},
      {"[-a]+[a-]+", {"-a", "a-"}, {"b"}},
      {"\\d{3}-\\d{4}", {"555-1234"}, {"55-1234", "abc-defg"}},
      {"\\w+\\s\\W", {"a_1 !"}, {"a  b", "a !!"}},
      {"\\D\\S", {"a!"}, {"1a", "a "}},
      {"\\.\\\\\\/\\*\\(\\)\\[\\]\\{\\}\\|\\?\\+\\^\\$", {".\\/*()[]{}|?+^$"}, {"x"}},
      {"[.][\\]][\\\\]", {".]\\"}, {"x]\\"}},
      {"\\n\\t\\r\\x41\\u00e9\\u{1F600}", {"\n\t\rA\xc3\xa9\xf0\x9f\x98\x80"}, {"ntr"}},
      {"\\uD83D\\uDE00", {"\xf0\x9f\x98\x80"}, {}},
      {".", {"a", "\xc3\xa9", "\xf0\x9f\x98\x80"}, {"\n", "\r", "", "ab"}},
      {"[^\\n]*", {"", "abc \xc3\xa9"}, {"a\nb"}},
      {"[\\d\\s]+", {"1 2\t3"}, {"1a"}},
      {"[\\b]", {"\b"}, {"b"}},
      {"é+ü", {"\xc3\xa9\xc3\xa9\xc3\xbc"}, {"e\xc3\xbc"}},
      {"(?<year>\\d{4})-(?<m>\\d\\d)", {"2026-11"}, {"26-11"}},
      {"x{", {"x{"}, {"x"}},
      {"a[]|b", {"b"}, {"a", "a[]"}},
      {"[^]{2}", {"\n\r", "ab"}, {"a"}},
      {"(a|b)*abb", {"abb", "babababb"}, {"ab", "abba"}},
      {"(true|false)", {"true", "false"}, {"True", "truefalse"}},
      {"-?(0|[1-9][0-9]*)(\\.[0-9]+)?", {"0", "-12.5"}, {"01", "1."}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pattern);
    const auto g = Grammar::parse(gbnf_from_regex(c.pattern));
    for (const auto& s : c.match)
      EXPECT_TRUE(g->accepts(s)) << s << "\n" << gbnf_from_regex(c.pattern);
    for (const auto& s : c.no_match) EXPECT_FALSE(g->accepts(s)) << s;
  }
}

// The grammar agrees with std::regex_match (ECMAScript) on random strings over each pattern's
// alphabet, and on strings the pattern itself spells (mutated).
TEST(GrammarRegex, AgreesWithStdRegexOnRandomStrings) {
  const std::vector<std::pair<const char*, const char*>> patterns = {
      {"(ab|a)*b?", "ab"},
      {"a{2,4}(b|c{1,2})*", "abc"},
      {"[a-c]+x?[^ab]", "abcx-"},
      {"(x|yz)+(\\d\\d?)?", "xyz19"},
      {"\\w\\W\\s*\\S", "a_ .1\t"},
      {"(?:a|b|)c{0,3}", "abc"},
      {"(a(b(c)?)?)+", "abc"},
      {".?\\.[.]", ".a\n"},
      {"[0-9]{1,2}(\\.[0-9]){1,2}", "01."},
      {"(-|\\+)?[1-9][0-9]*|0", "+-019"},
      {"[^a-y]{2}z+", "ayz!"},
      {"(ab){2}|(ba){1,}", "ab"},
  };
  std::mt19937 rng(1234);
  for (const auto& [pattern, alphabet] : patterns) {
    SCOPED_TRACE(pattern);
    const std::regex re(pattern, std::regex::ECMAScript);
    const auto g = Grammar::parse(gbnf_from_regex(pattern));
    const std::string abc = alphabet;
    int matches = 0;
    for (int i = 0; i < 400; ++i) {
      std::string s;
      const int len = rng() % 9;
      for (int k = 0; k < len; ++k) s += abc[rng() % abc.size()];
      const bool expected = std::regex_match(s, re);
      matches += expected;
      EXPECT_EQ(g->accepts(s), expected) << '"' << s << '"';
    }
    EXPECT_GT(matches, 0) << "no random string matched: a weak check";
  }
}

TEST(GrammarRegex, UnsupportedConstructsAreNamed) {
  EXPECT_NE(error_of("(a)\\1").find("backreference \\1"), std::string::npos);
  EXPECT_NE(error_of("(?<n>a)\\k<n>").find("backreference"), std::string::npos);
  EXPECT_NE(error_of("a(?=b)").find("lookahead"), std::string::npos);
  EXPECT_NE(error_of("a(?!b)").find("lookahead"), std::string::npos);
  EXPECT_NE(error_of("(?<=a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(error_of("\\bword\\b").find("word boundary \\b"), std::string::npos);
  EXPECT_NE(error_of("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(error_of("(?i)abc").find("'(?'"), std::string::npos);
  EXPECT_NE(error_of("a^b").find("anchor '^'"), std::string::npos);
  EXPECT_NE(error_of("a$b").find("'$'"), std::string::npos);
  EXPECT_NE(error_of("\\A").find("escape \\A"), std::string::npos);
  EXPECT_NE(error_of("(ab").find("missing ')'"), std::string::npos);
  EXPECT_NE(error_of("ab)").find("unmatched ')'"), std::string::npos);
  EXPECT_NE(error_of("[ab").find("missing ']'"), std::string::npos);
  EXPECT_NE(error_of("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(error_of("a{3,2}").find("m > n"), std::string::npos);
  EXPECT_NE(error_of("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(error_of("a\xff").find("not UTF-8"), std::string::npos);
  EXPECT_EQ(error_of("a{1,100000}"), "no error");  // read as a{1,}
}

TEST(GrammarRegex, HostilePatternsFailFast) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of("a{1000000}").find("repeat count"), std::string::npos);
  EXPECT_NE(error_of("((a{999}){999}){999}").find("expands"), std::string::npos);
  EXPECT_NE(
      error_of("(((((((((a{999}){999}){999}){999}){999}){999}){999}){999}){999})").find("expands"),
      std::string::npos);
  EXPECT_NE(error_of(std::string(1000, '(') + std::string(1000, ')')).find("nested deeper"),
            std::string::npos);
  // Nested repeats and alternatives, 150 deep: written once each, not 2^150 times.
  std::string nested;
  for (int i = 0; i < 150; ++i) nested += "(a|";
  nested += "b";
  for (int i = 0; i < 150; ++i) nested += ")*";
  EXPECT_EQ(error_of(nested), "no error");
  EXPECT_NE(error_of(std::string(5000000, 'a')).find("longer than 64 KiB"), std::string::npos);
  EXPECT_EQ(error_of(std::string(60000, 'a')), "no error");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A hang would take far longer; a loaded CI machine, not much; the sanitizers, a few times.
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 30.0);
#else
  EXPECT_LT(seconds, 5.0);
#endif
}

TEST(GrammarChoices, ExactlyOneOfTheStrings) {
  const std::vector<std::string> choices = {"yes",      "no",     "y\"es\\", "caf\xc3\xa9",
                                            "a\nb\x01", "no way", ""};
  const auto g = Grammar::parse(gbnf_from_choices(choices));
  for (const auto& c : choices) EXPECT_TRUE(g->accepts(c)) << c;
  for (const char* bad : {"ye", "yess", "no ", "No", "cafe", "a\nb", "y\"es"})
    EXPECT_FALSE(g->accepts(bad)) << bad;
  EXPECT_FALSE(Grammar::parse(gbnf_from_choices(std::vector<std::string>{"a"}))->accepts(""));
}

TEST(GrammarChoices, BadListsAreErrors) {
  const auto error = [](std::vector<std::string> c) {
    try {
      gbnf_from_choices(c);
    } catch (const GrammarError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error({}).find("empty"), std::string::npos);
  EXPECT_NE(error({"ok", "bad\xc3"}).find("choices[1]"), std::string::npos);
  std::vector<std::string> many(150000, std::string(40, 'x'));
  for (size_t i = 0; i < many.size(); ++i) many[i] += std::to_string(i);
  EXPECT_NE(error(many).find("MiB"), std::string::npos);
}

}  // namespace
}  // namespace sandwich::engine::grammar
