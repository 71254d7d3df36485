// GBNF grammars come with requests (guided_grammar, a grammar made from a client's JSON Schema):
// the input is a grammar, then after a NUL byte a text. The grammar is parsed; the text is
// checked with Grammar::accepts; a matcher over a small vocabulary then masks, picks the first
// allowed token and takes it, for a few steps, and takes the text's own tokens. A GrammarError is
// a fine answer; a crash, a hang or a big allocation is not (the automaton's bound is small).
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich::engine;
  using namespace sandwich::engine::grammar;
  static const std::unique_ptr<Tokenizer> tok =
      make_tokenizer(make_synthetic_vocab(Vocab::Kind::ByteLevelBPE, 600));
  static const auto vocab = std::make_shared<const TokenVocabulary>(*tok);
  const std::string_view input = sandwich::fuzz::as_text(data, size);
  const size_t nul = input.find('\0');
  const std::string_view gbnf = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  try {
    auto g = Grammar::parse(gbnf);
    (void)g->accepts(text);
    auto automaton = std::make_shared<GrammarAutomaton>(g, vocab, size_t{8} << 20);
    const int32_t end = tok->eos_id();
    std::vector<float> logits(tok->vocab_size());
    GrammarMatcher m(automaton, {end});
    for (int step = 0; step < 8 && !m.must_end(); ++step) {
      std::fill(logits.begin(), logits.end(), 0.0f);
      m.mask_logits(logits.data(), tok->vocab_size());
      int32_t pick = -1;
      for (int32_t t = 0; t < tok->vocab_size() && pick < 0; ++t)
        if (logits[t] == 0.0f && t != end) pick = t;
      if (pick < 0) break;
      m.accept(pick);
    }
    GrammarMatcher follows(automaton, {end});
    for (int32_t t : tok->encode(text, false)) {
      if (!follows.allows(t)) break;
      follows.accept(t);
    }
  } catch (const GrammarError&) {
  }
  return 0;
}
