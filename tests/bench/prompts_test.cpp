// Prompts built to an exact token count under a server's tokenizer, with unique salts.
#include <gtest/gtest.h>

#include <set>

#include "bench/prompts.h"
#include "toy_vocab.h"

namespace sandwich::bench {
namespace {

// The fake server's toy tokenizer (toy_vocab.h), counting its calls.
class ToyTokenizer : public TokenizerApi {
 public:
  explicit ToyTokenizer(int bytes_per_token = 0) : vocab_(bytes_per_token) {}
  std::vector<int> tokenize(const std::string& text, bool add_special) override {
    ++calls;
    return vocab_.encode(text, add_special);
  }
  std::string detokenize(const std::vector<int>& ids) override {
    ++calls;
    return vocab_.decode(ids);
  }
  int calls = 0;

 private:
  test::ToyVocab vocab_;
};

// Counts only ever come out even: odd lengths are unreachable.
class EvenCounter : public ToyTokenizer {
 public:
  int count_prompt(const std::string& text) override {
    const int n = static_cast<int>(tokenize(text, true).size());
    return n + n % 2;
  }
};

TEST(BenchPrompts, ExactLengthsUnderAWordTokenizer) {
  ToyTokenizer tok;
  PromptBuilder b(tok, 0);
  for (int n : {1, 2, 3, 4, 5, 8, 17, 100, 1000, 3000}) {
    const BuiltPrompt p = b.build(n, n);
    EXPECT_TRUE(p.exact) << n;
    EXPECT_EQ(p.tokens, n);
    EXPECT_EQ(tok.count_prompt(p.text), n) << n;
  }
}

TEST(BenchPrompts, ExactLengthsUnderAByteTokenizerAfterAdjusting) {
  ToyTokenizer tok(3);
  PromptBuilder b(tok, 5);
  for (int i = 0; i < 60; ++i) {
    const int n = 4 + i * 37 % 900;
    const BuiltPrompt p = b.build(i, n);
    ASSERT_TRUE(p.exact) << n;
    EXPECT_EQ(tok.count_prompt(p.text), n);
  }
}

TEST(BenchPrompts, EachPromptStartsWithItsOwnSalt) {
  ToyTokenizer tok;
  PromptBuilder b(tok, 9);
  std::set<std::string> firsts;
  for (int i = 0; i < 200; ++i) {
    const BuiltPrompt p = b.build(i, 64);
    const std::string salt = salt_text(i, 9);
    EXPECT_EQ(p.text.rfind(salt, 0), 0u) << p.text;
    firsts.insert(p.text.substr(0, salt.size()));
  }
  EXPECT_EQ(firsts.size(), 200u);
  std::set<std::string> salts;
  for (int i = 0; i < 20000; ++i) salts.insert(salt_text(i, 1));
  EXPECT_EQ(salts.size(), 20000u);
}

TEST(BenchPrompts, UnreachableLengthKeepsTheClosest) {
  EvenCounter tok;
  PromptBuilder b(tok, 0);
  const BuiltPrompt odd = b.build(0, 51);
  EXPECT_FALSE(odd.exact);
  EXPECT_EQ(std::abs(odd.tokens - 51), 1);
  EXPECT_EQ(tok.count_prompt(odd.text), odd.tokens);
  EXPECT_TRUE(b.build(1, 50).exact);
}

TEST(BenchPrompts, FewServerCallsPerPrompt) {
  ToyTokenizer tok(3);
  PromptBuilder b(tok, 0);
  b.build(0, 500);  // the corpus is tokenized once, here
  tok.calls = 0;
  for (int i = 1; i <= 50; ++i) b.build(i, 100 + i);
  EXPECT_LE(tok.calls, 50 * 7);
}

TEST(BenchPrompts, ApproximationCountsOneTokenPerWordPlusBos) {
  for (int n : {1, 2, 3, 6, 64, 500}) {
    const BuiltPrompt p = approximate_prompt(3, n, 0);
    EXPECT_FALSE(p.exact);
    EXPECT_EQ(p.tokens, std::max(n, 2));
    ToyTokenizer words;
    EXPECT_EQ(words.count_prompt(p.text), std::max(n, 2)) << p.text;
  }
  EXPECT_NE(approximate_prompt(1, 64, 0).text, approximate_prompt(2, 64, 0).text);
}

TEST(BenchPrompts, CorpusIsDeterministicWords) {
  EXPECT_EQ(corpus_text(50, 3), corpus_text(50, 3));
  EXPECT_NE(corpus_text(50, 3), corpus_text(50, 4));
  ToyTokenizer words;
  EXPECT_EQ(words.tokenize(corpus_text(777, 1), false).size(), 777u);
}

}  // namespace
}  // namespace sandwich::bench
