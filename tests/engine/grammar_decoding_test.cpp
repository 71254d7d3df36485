// Grammar-constrained decoding through the scheduler on the real stories260K model: greedy and
// sampled sequences (several sharing one automaton, beside unconstrained ones in the same
// batch) produce sentences of their grammar, end when the grammar ends, and finish a whole
// sentence within max_tokens.
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/formats/model.h"
#include "engine/grammar/grammar.h"
#include "engine/runtime/scheduler.h"
#include "model_fixtures.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using grammar::Grammar;
using grammar::GrammarAutomaton;
using grammar::TokenVocabulary;

struct Result {
  std::string text, error;
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::None;
  bool finished = false;
};

class GrammarDecoding : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = load_model(test::stories_load_options(0)).release();
    vocab_ = new std::shared_ptr<const TokenVocabulary>(
        std::make_shared<const TokenVocabulary>(*model_->tokenizer));
  }
  static void TearDownTestSuite() {
    delete vocab_;
    delete model_;
  }

  static std::shared_ptr<GrammarAutomaton> automaton(const std::string& gbnf) {
    return std::make_shared<GrammarAutomaton>(Grammar::parse(gbnf), *vocab_);
  }

  std::vector<int32_t> prompt(const std::string& text) const {
    return model_->tokenizer->encode(text, true);
  }

  // Runs the requests as one submission and waits for all of them.
  static std::vector<Result> run(Scheduler& s, std::vector<EngineRequest> rs) {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Result> out(rs.size());
    for (size_t i = 0; i < rs.size(); ++i)
      rs[i].on_output = [&, i](const RequestOutput& o) {
        std::lock_guard<std::mutex> lock(mu);
        Result& r = out[i];
        r.text += o.text;
        r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
        r.error += o.error;
        if (o.finished) {
          r.finished = true;
          r.reason = o.finish_reason;
        }
        cv.notify_all();
      };
    s.submit(std::move(rs));
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] {
      for (const Result& r : out)
        if (!r.finished) return false;
      return true;
    })) << "requests did not finish";
    return out;
  }

  EngineRequest request(const std::string& text, std::shared_ptr<GrammarAutomaton> g,
                        float temperature, uint64_t seed, int32_t max_tokens) const {
    EngineRequest r;
    r.prompt = prompt(text);
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    r.grammar = std::move(g);
    return r;
  }

  static Model* model_;
  static std::shared_ptr<const TokenVocabulary>* vocab_;
};
Model* GrammarDecoding::model_ = nullptr;
std::shared_ptr<const TokenVocabulary>* GrammarDecoding::vocab_ = nullptr;

// Each grammar is checked on greedy output and on four sampled sequences at once (one
// automaton), with top-k, top-p and min-p among them.
TEST_F(GrammarDecoding, EverySequenceIsASentenceOfItsGrammar) {
  const std::vector<std::string> grammars = {
      R"(root ::= " The end.")",
      R"(root ::= " Once upon a time" (" there was a " ("cat" | "dog" | "bird")) ".")",
      R"(root ::= " " [A-Z] [a-z]{2,8} (" " [a-z]{1,6}){1,4} ".")",
      R"(root ::= " [" num ("," num){0,4} "]"
         num ::= "0" | [1-9] [0-9]{0,3})",
      R"(root ::= " " ("yes" | "no" | "maybe") "!"?)",
  };
  SchedulerOptions o;
  o.max_model_len = 256;
  Scheduler s(*model_, o);
  for (const std::string& g : grammars) {
    SCOPED_TRACE(g);
    const auto parsed = Grammar::parse(g);
    auto a = automaton(g);
    std::vector<EngineRequest> rs;
    rs.push_back(request("Lily saw", a, 0.0f, 1, 64));
    for (int i = 0; i < 4; ++i) {
      EngineRequest r = request("Lily saw", a, 1.0f, 100 + i, 64);
      if (i == 1) r.sampling.top_k = 5;
      if (i == 2) r.sampling.top_p = 0.8f;
      if (i == 3) r.sampling.min_p = 0.1f;
      rs.push_back(std::move(r));
    }
    // Unconstrained beside them: the batch goes on for everyone.
    rs.push_back(request("Tim had a", nullptr, 0.0f, 1, 12));
    const auto out = run(s, std::move(rs));
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      EXPECT_EQ(out[i].error, "") << "sequence " << i;
      EXPECT_EQ(out[i].reason, FinishReason::Stop) << "sequence " << i << ": " << out[i].text;
      EXPECT_TRUE(parsed->accepts(out[i].text)) << "sequence " << i << ": '" << out[i].text << "'";
    }
    EXPECT_EQ(out.back().tokens.size(), 12u) << "the unconstrained request ran to its length";
  }
}

TEST_F(GrammarDecoding, AGrammarThatEndsEndsTheSequenceEvenWithIgnoreEos) {
  SchedulerOptions o;
  o.max_model_len = 128;
  Scheduler s(*model_, o);
  EngineRequest r = request("Lily saw", automaton(R"(root ::= " a big dog")"), 0.0f, 1, 50);
  r.ignore_eos = true;
  std::vector<EngineRequest> rs;
  rs.push_back(std::move(r));
  const auto out = run(s, std::move(rs));
  EXPECT_EQ(out[0].text, " a big dog");
  EXPECT_EQ(out[0].reason, FinishReason::Stop);
}

// Unbounded repetition on random-ish output: without the budget, nothing would end it.
TEST_F(GrammarDecoding, AWholeSentenceFitsInMaxTokens) {
  SchedulerOptions o;
  o.max_model_len = 256;
  Scheduler s(*model_, o);
  const std::string g = R"g(root ::= " (" [a-z ]* ")" " and " [a-z]+ ".")g";
  const auto parsed = Grammar::parse(g);
  auto a = automaton(g);
  for (int32_t max_tokens : {12, 20, 40}) {
    std::vector<EngineRequest> rs;
    rs.push_back(request("Lily saw", a, 0.0f, 1, max_tokens));
    for (int i = 0; i < 3; ++i) rs.push_back(request("Lily saw", a, 1.5f, 7 + i, max_tokens));
    const auto out = run(s, std::move(rs));
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_LE(out[i].tokens.size(), static_cast<size_t>(max_tokens));
      EXPECT_TRUE(parsed->accepts(out[i].text))
          << "max_tokens " << max_tokens << ", sequence " << i << ": '" << out[i].text << "'";
      EXPECT_EQ(out[i].reason, FinishReason::Stop) << out[i].text;
    }
  }
}

// The shortest ending is counted in bytes, which overstate the tokens a vocabulary of longer
// pieces needs: a sentence of more bytes than max_tokens still ends in time, by the tokens that
// bring it closest to the end.
TEST_F(GrammarDecoding, ASentenceLongerInBytesThanMaxTokensStillEnds) {
  SchedulerOptions o;
  o.max_model_len = 256;
  Scheduler s(*model_, o);
  const std::string g =
      R"g(root ::= " Once upon a time, there was a little girl named Lily" [a-z ]*)g";
  const auto parsed = Grammar::parse(g);
  auto a = automaton(g);
  std::vector<EngineRequest> rs;
  rs.push_back(request("Hi", a, 0.0f, 1, 20));
  for (int i = 0; i < 3; ++i) rs.push_back(request("Hi", a, 1.0f, 3 + i, 20));
  const auto out = run(s, std::move(rs));
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].error, "") << i;
    EXPECT_TRUE(parsed->accepts(out[i].text)) << i << ": '" << out[i].text << "'";
    EXPECT_EQ(out[i].reason, FinishReason::Stop) << out[i].text;
  }
}

}  // namespace
}  // namespace sandwich::engine
