// Token masks against a plain reference (grammar_reference.h), for a small synthetic vocabulary
// and for the real Llama-3 tokenizer; replays of valid documents; end tokens; a tiny cache; and
// grammars or texts past the limits.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/text/tokenizer.h"
#include "grammar/grammar_automaton.h"
#include "grammar/token_trie.h"
#include "grammar_reference.h"
#include "test_data.h"

namespace sandwich::engine::grammar {
namespace {

constexpr std::string_view kJson = R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,16})? ws
ws     ::= | " " | "\n" [ \t]{0,20}
)g";

// A small schema's object: {"name": string, "age": integer, "tags": [string...]}.
constexpr std::string_view kPerson =
    R"g(root ::= "{" ws "\"name\"" ws ":" ws str "," ws "\"age\"" ws ":" ws int "," ws "\"tags\"" ws ":" ws "[" ws (str ("," ws str)*)? "]" ws "}"
str  ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])* "\"" ws
int  ::= "-"? ([0-9] | [1-9] [0-9]{1,15}) ws
ws   ::= [ \t\n]{0,8}
)g";

constexpr std::string_view kDocument =
    "{\"name\": \"Ada Lovelace\", \"age\": 36, \"tags\": [\"math\", \"poésie\", \"日本語\", "
    "\"a\\\"b\"],\n  \"nested\": {\"x\": [1, 2.5, -3e10, true, null, {}], \"y\": []}}";

const Tokenizer& llama3() {
  static std::unique_ptr<Tokenizer> tok =
      load_tokenizer(test::data_dir() / "tokenizers/llama3/tokenizer.model");
  return *tok;
}
std::shared_ptr<const TokenVocabulary> llama3_vocab() {
  static auto v = std::make_shared<const TokenVocabulary>(llama3());
  return v;
}

const Tokenizer& small_tokenizer() {
  static std::unique_ptr<Tokenizer> tok =
      make_tokenizer(make_synthetic_vocab(Vocab::Kind::ByteLevelBPE, 2000));
  return *tok;
}

// Checks the mask at the matcher's state against the reference for every token of the vocabulary
// (or every `stride`-th), and `allows` for the same tokens.
void expect_mask_matches_reference(GrammarMatcher& m, const Grammar& g, const TokenVocabulary& v,
                                   const reference::Stacks& now, std::vector<int32_t> end_tokens,
                                   int stride = 1) {
  const auto& vi = v.impl();
  std::vector<float> logits(vi.vocab_size, 1.0f);
  m.mask_logits(logits.data(), vi.vocab_size);
  int mismatches = 0;
  for (int32_t t = 0; t < vi.vocab_size; t += stride) {
    bool is_end = std::find(end_tokens.begin(), end_tokens.end(), t) != end_tokens.end();
    bool expected =
        is_end ? reference::complete(now)
               : vi.in_trie[t] && !reference::after(g.impl(), now, vi.token_bytes(t)).empty();
    bool masked_in = !std::isinf(logits[t]);
    if (masked_in != expected && ++mismatches < 5)
      ADD_FAILURE() << "token " << t << " '" << vi.token_bytes(t) << "': mask says " << masked_in
                    << ", the reference " << expected;
    if (m.allows(t) != expected && ++mismatches < 5)
      ADD_FAILURE() << "token " << t << ": allows disagrees with the reference";
  }
  EXPECT_EQ(mismatches, 0);
}

// Walks random allowed tokens from the start, checking every mask on the way (end tokens too:
// allowed exactly where the reference has a whole sentence).
void random_walks(std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocab,
                  std::vector<int32_t> end_tokens, int walks, int steps, int stride,
                  uint32_t seed) {
  auto g = Grammar::parse(gbnf);
  auto automaton = std::make_shared<GrammarAutomaton>(g, vocab);
  std::mt19937 rng(seed);
  const auto& vi = vocab->impl();
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(automaton, end_tokens);
    auto now = reference::start(g->impl());
    std::string text;
    for (int s = 0; s < steps; ++s) {
      expect_mask_matches_reference(m, *g, *vocab, now, end_tokens, stride);
      if (::testing::Test::HasFailure()) return;
      std::vector<float> logits(vi.vocab_size, 0.0f);
      m.mask_logits(logits.data(), vi.vocab_size);
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < vi.vocab_size; ++t)
        if (!std::isinf(logits[t]) && vi.in_trie[t]) allowed.push_back(t);
      if (allowed.empty()) break;
      int32_t t = allowed[rng() % allowed.size()];
      m.accept(t);
      text += vi.token_bytes(t);
      now = reference::after(g->impl(), now, vi.token_bytes(t));
      ASSERT_FALSE(now.empty()) << text;
      EXPECT_EQ(m.can_end(), reference::complete(now)) << text;
    }
  }
}

// The reference is slow under the sanitizers: there, every few tokens stand for all.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSlowBuild = 5;
#else
constexpr int kSlowBuild = 1;
#endif

TEST(GrammarMatcher, SmallVocabularyMatchesReference) {
  auto vocab = std::make_shared<const TokenVocabulary>(small_tokenizer());
  const auto ends = small_tokenizer().stop_ids();
  random_walks(kJson, vocab, ends, 4, 20, kSlowBuild, 1);
  random_walks(kPerson, vocab, ends, 3, 20, kSlowBuild, 2);
  random_walks(R"g(root ::= [ぁ-ゟ一-鿿]+ ("、" [ァ-ヿ]+)* "。")g", vocab, ends, 2, 10,
               kSlowBuild, 3);
  random_walks(R"g(root ::= ("a" | "b" root "c")+ | "x"{2,5} .)g", vocab, ends, 3, 12, kSlowBuild,
               4);
}

TEST(GrammarMatcher, Llama3MatchesReference) {
  // Every 13th token of 128k against the reference at a few random states of two grammars.
  const std::vector<int32_t> ends{llama3().eos_id()};
  random_walks(kJson, llama3_vocab(), ends, 1, 6, 13 * kSlowBuild, 5);
  random_walks(kPerson, llama3_vocab(), ends, 1, 5, 13 * kSlowBuild, 6);
}

TEST(GrammarMatcher, Llama3VocabularyTrie) {
  const auto& v = llama3_vocab()->impl();
  EXPECT_EQ(v.vocab_size, 128256);
  int in = 0;
  for (bool b : v.in_trie) in += b;
  EXPECT_EQ(in, 128000);  // the 256 specials are left out
  EXPECT_EQ(v.token_ids.size(), 128000u);
  EXPECT_EQ(v.nodes.back().depth, 0);
  // The walk visits children after their parent and skips whole subtrees.
  for (size_t i = 0; i + 1 < v.nodes.size(); ++i) {
    ASSERT_GT(v.nodes[i].skip, static_cast<int32_t>(i));
    ASSERT_LE(v.nodes[i + 1].depth, v.nodes[i].depth + 1);
  }
  const int32_t hello = llama3().encode("Hello", false)[0];
  EXPECT_EQ(v.token_bytes(hello), "Hello");
}

TEST(GrammarMatcher, ReplaysAValidDocument) {
  const auto& tok = llama3();
  for (std::string_view gbnf : {kJson, kPerson}) {
    std::string doc = gbnf == kJson ? std::string(kDocument)
                                    : "{\"name\": \"Ada\", \"age\": 36, \"tags\": [\"x\", \"é\"]}";
    auto g = Grammar::parse(gbnf);
    ASSERT_TRUE(g->accepts(doc));
    auto automaton = std::make_shared<GrammarAutomaton>(g, llama3_vocab());
    const int32_t eos = tok.eos_id();
    GrammarMatcher m(automaton, {eos});
    std::vector<float> logits(tok.vocab_size());
    for (int32_t t : tok.encode(doc, false)) {
      EXPECT_FALSE(m.can_end());
      std::fill(logits.begin(), logits.end(), 0.5f);
      m.mask_logits(logits.data(), tok.vocab_size());
      ASSERT_EQ(logits[t], 0.5f) << "token " << t << " '" << tok.piece(t, 0) << "'";
      EXPECT_TRUE(std::isinf(logits[eos]));
      EXPECT_FALSE(m.allows(eos));
      EXPECT_THROW(m.accept(eos), GrammarError);
      m.accept(t);
    }
    EXPECT_TRUE(m.can_end());
    std::fill(logits.begin(), logits.end(), 0.5f);
    m.mask_logits(logits.data(), tok.vocab_size());
    EXPECT_EQ(logits[eos], 0.5f);
    EXPECT_TRUE(std::isinf(logits[tok.encode("x", false)[0]]));
    m.accept(eos);
    EXPECT_TRUE(m.must_end());
    EXPECT_THROW(m.accept(tok.encode("}", false)[0]), GrammarError);
  }
}

TEST(GrammarMatcher, EndTokensAndMustEnd) {
  const auto& tok = small_tokenizer();
  auto vocab = std::make_shared<const TokenVocabulary>(tok);
  auto g = Grammar::parse(R"g(root ::= "yes" | "no" | "yes!")g");
  auto automaton = std::make_shared<GrammarAutomaton>(g, vocab);
  const int32_t end = tok.stop_ids().at(0);
  GrammarMatcher m(automaton, {end});
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.allows(end));
  for (int32_t t : tok.encode("yes", false)) m.accept(t);
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.must_end());
  EXPECT_TRUE(m.allows(end));
  const int32_t bang = tok.encode("!", false)[0];
  EXPECT_TRUE(m.allows(bang));
  m.accept(bang);
  EXPECT_TRUE(m.must_end());
  // The vocabulary's special tokens are never text; ids past it (a padded embedding) neither.
  std::vector<float> logits(tok.vocab_size() + 10, 0.0f);
  m.mask_logits(logits.data(), static_cast<int32_t>(logits.size()));
  for (int32_t t = 0; t < static_cast<int32_t>(logits.size()); ++t)
    EXPECT_EQ(std::isinf(logits[t]), t != end) << t;
  m.accept(end);
  EXPECT_FALSE(m.allows(end));
  EXPECT_THROW(m.accept(end), GrammarError);
  // Unknown ids are refused, not read out of bounds.
  GrammarMatcher fresh(automaton, {end});
  EXPECT_FALSE(fresh.allows(-1));
  EXPECT_FALSE(fresh.allows(tok.vocab_size() + 5));
  EXPECT_THROW(fresh.accept(-3), GrammarError);
  EXPECT_THROW(GrammarMatcher(nullptr, {}), std::invalid_argument);
  EXPECT_THROW(GrammarAutomaton(g, nullptr), std::invalid_argument);
}

TEST(GrammarMatcher, TokenEndingInsideACharacter) {
  // Llama-3 has tokens that hold part of a UTF-8 character; the grammar sees their bytes.
  const auto& v = llama3_vocab()->impl();
  auto g = Grammar::parse(R"g(root ::= "日本" [語]?)g");
  auto automaton = std::make_shared<GrammarAutomaton>(g, llama3_vocab());
  int partial = 0;
  for (int32_t t = 0; t < v.vocab_size; ++t) {
    auto b = v.token_bytes(t);
    if (b.empty() || std::string_view("日本語").substr(0, b.size()) != b) continue;
    GrammarMatcher m(automaton, {});
    EXPECT_TRUE(m.allows(t)) << t;
    if (b.size() % 3) ++partial;
  }
  EXPECT_GT(partial, 0);  // at least one such token exists, e.g. the byte 0xE6
  GrammarMatcher m(automaton, {});
  const int32_t e6 = llama3().token_id("æ");  // byte-level BPE's name of the byte 0xE6
  ASSERT_GE(e6, 0);
  m.accept(e6);
  EXPECT_FALSE(m.allows(e6));
}

TEST(GrammarMatcher, TinyCacheStillGivesTheRightMasks) {
  const auto& tok = llama3();
  auto g = Grammar::parse(kJson);
  const auto ids = tok.encode(std::string(kDocument), false);
  auto masks_along = [&](std::shared_ptr<GrammarAutomaton> automaton) {
    GrammarMatcher m(automaton, {});
    std::vector<std::vector<float>> out;
    for (int32_t t : ids) {
      out.emplace_back(tok.vocab_size(), 0.0f);
      m.mask_logits(out.back().data(), tok.vocab_size());
      m.accept(t);
      EXPECT_LE(automaton->cache_bytes(), automaton->impl().cache_bytes());
    }
    return out;
  };
  auto big = std::make_shared<GrammarAutomaton>(g, llama3_vocab());
  const auto expected = masks_along(big);
  // Room for the states and three masks: most masks are dropped and computed again (and the
  // states, once they fill half of it, forgotten but for the live matcher's).
  const size_t mask_bytes = (big->impl().mask_words() + 1) * 8 + 96;
  const size_t masks = big->impl().cached_masks();
  ASSERT_GT(masks, 10u);
  const size_t bound = big->cache_bytes() - (masks - 3) * mask_bytes;
  auto tiny = std::make_shared<GrammarAutomaton>(g, llama3_vocab(), bound);
  EXPECT_TRUE(masks_along(tiny) == expected);
  EXPECT_LE(tiny->cache_bytes(), bound);
  EXPECT_LT(tiny->impl().cached_masks(), masks);
  // A second document through the same automaton: the same masks again.
  EXPECT_TRUE(masks_along(tiny) == expected);
}

TEST(GrammarMatcher, AutomatonKeptForManySequencesCompacts) {
  // Documents of growing depth through one automaton: each depth brings new states. A bound of a
  // few hundred states makes it forget old ones (keeping the live matchers' states) instead of
  // failing, and the masks stay right.
  const auto& tok = small_tokenizer();
  auto vocab = std::make_shared<const TokenVocabulary>(tok);
  auto g = Grammar::parse(kJson);
  auto big = std::make_shared<GrammarAutomaton>(g, vocab);
  auto small = std::make_shared<GrammarAutomaton>(g, vocab, size_t{400} << 10);
  const int32_t n = tok.vocab_size();
  std::vector<float> la(n), lb(n);
  GrammarMatcher keeps_a(big, {}), keeps_b(small, {});  // live across every compaction
  for (int32_t t : tok.encode("{\"k\": [[", false)) {
    keeps_a.accept(t);
    keeps_b.accept(t);
  }
  for (int depth = 1; depth <= 40; ++depth) {
    std::string doc = "{\"a\": " + std::string(depth, '[') + "1" + std::string(depth, ']') + "}";
    GrammarMatcher a(big, {}), b(small, {});
    for (int32_t t : tok.encode(doc, false)) {
      std::fill(la.begin(), la.end(), 0.0f);
      std::fill(lb.begin(), lb.end(), 0.0f);
      a.mask_logits(la.data(), n);
      b.mask_logits(lb.data(), n);
      ASSERT_EQ(la, lb) << doc;
      a.accept(t);
      b.accept(t);
    }
    EXPECT_TRUE(b.can_end());
    EXPECT_LE(small->cache_bytes(), size_t{400} << 10);
  }
  EXPECT_GT(small->impl().compactions(), 0u);
  std::fill(la.begin(), la.end(), 0.0f);
  std::fill(lb.begin(), lb.end(), 0.0f);
  keeps_a.mask_logits(la.data(), n);
  keeps_b.mask_logits(lb.data(), n);
  EXPECT_EQ(la, lb);
  for (int32_t t : tok.encode("1]]}", false)) keeps_b.accept(t);
  EXPECT_TRUE(keeps_b.can_end());
}

TEST(GrammarMatcher, LimitsGiveGrammarErrors) {
  auto vocab = std::make_shared<const TokenVocabulary>(small_tokenizer());
  const auto& tok = small_tokenizer();
  auto feed = [&](std::string_view gbnf, const std::string& text, size_t cache = 256 << 20) {
    auto automaton = std::make_shared<GrammarAutomaton>(Grammar::parse(gbnf), vocab, cache);
    GrammarMatcher m(automaton, {});
    std::vector<float> logits(tok.vocab_size());
    for (int32_t t : tok.encode(text, false)) {
      m.mask_logits(logits.data(), tok.vocab_size());
      m.accept(t);
    }
  };
  // Nesting deeper than the stack bound: the masks near it never fail (a token that would nest
  // too deep is just not allowed), taking such a token does, and says why.
  try {
    feed(R"g(root ::= "(" root ")" | "x")g", std::string(3000, '('));
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("would nest deeper than 2048 rules"), std::string::npos)
        << e.what();
  }
  feed(R"g(root ::= "(" root ")" | "x")g",
       std::string(2047, '(') + "x" + std::string(2047, ')'));  // just within
  EXPECT_FALSE(Grammar::parse(R"g(root ::= "(" root ")" | "x")g")
                   ->accepts(std::string(3000, '(') + "x" + std::string(3000, ')')));
  // Exponentially many parses: each '(' may close with ')' or ']'.
  try {
    feed(R"g(root ::= "(" root ")" | "(" root "]" | "x")g", std::string(20, '('));
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous"), std::string::npos) << e.what();
  }
  // A bound too small for the states themselves.
  EXPECT_THROW(feed(kJson, "{\"a\": [1, 2, 3]}", 4096), GrammarError);
  // A long chain of rules, each waiting for a byte after the next: deeper than the stack bound.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 5000; ++i)
    chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\"\n";
  chain += "r5000 ::= \"y\"\n";
  try {
    feed(chain, "y");
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_EQ(std::string(e.what()),
              "grammar: its rules nest deeper than 2048 before the first byte");
  }
  // The same chain in tail position pushes nothing.
  std::string tail_chain = "root ::= r0\n";
  for (int i = 0; i < 5000; ++i)
    tail_chain += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  tail_chain += "r5000 ::= \"y\"\n";
  EXPECT_TRUE(Grammar::parse(tail_chain)->accepts(std::string(5000, 'x') + "y"));
  // Empty-matching items repeated inside repetitions: a closure too large for one byte.
  try {
    feed(R"g(root ::= (("a"?){0,5000}){0,5000} "b")g", "aab");
    ADD_FAILURE() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("expansions for one byte"), std::string::npos) << e.what();
  }
  // Within the bounds nothing is refused.
  feed(R"g(root ::= "(" root ")" | "x")g", std::string(500, '(') + "x" + std::string(500, ')'));
}

}  // namespace
}  // namespace sandwich::engine::grammar
