// bench_grammar: the cost of grammar token masks with the Llama-3 vocabulary (128,256 tokens).
// The tokens of a valid JSON document are replayed through matchers, a mask applied to a full
// row of logits before each token, as the engine does before sampling:
//   cold:  a fresh automaton (no states, no masks yet) for every document;
//   warm:  the same automaton again (its states and masks kept from the documents before);
//   batch 1: one matcher; batch 16: 16 matchers over one automaton at staggered positions, one
//            mask each per step, as a decode step of 16 sequences needs.
// Grammars: llama.cpp's json.gbnf (tests/data/grammars) and an object of a small schema.
// The counter per_mask is the CPU time of one mask (mask_logits) plus its accept.
//   string_uncached: one state inside a JSON string (most tokens allowed), its transitions known
//            but its mask dropped from the cache before each call: the full trie walk;
//   string_cached, after_key_cached: a mask from the cache, most or few tokens allowed.
//
//   build/bin/bench_grammar
//   build/bin/bench_grammar --benchmark_filter='json/warm'
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/paths.h"
#include "engine/grammar/grammar.h"
#include "engine/text/tokenizer.h"
#include "grammar/grammar_automaton.h"

namespace sandwich::engine::grammar {
namespace {

// json.gbnf takes integers only; its strings are where most tokens are allowed.
constexpr std::string_view kJsonDocument =
    "{\"id\": 4182, \"title\": \"Structured output on CPUs\", \"draft\": false,\n"
    " \"authors\": [{\"name\": \"Ada Lovelace\", \"age\": 36}, {\"name\": \"Alan Turing\", "
    "\"age\": 41}],\n \"abstract\": \"We constrain sampling with a grammar compiled to a byte "
    "automaton; the mask of each state is computed once by walking the vocabulary trie, then "
    "reused. Unicode: caf\\u00e9, 日本語, emoji 😀.\",\n \"tags\": [\"grammar\", \"json\", "
    "\"llm\"], \"scores\": [1, -2, 30, 400], \"meta\": {\"pages\": 12, \"open\": true}}";

constexpr std::string_view kPersonGrammar =
    R"g(root ::= "{" ws "\"name\"" ws ":" ws str "," ws "\"age\"" ws ":" ws int "," ws "\"email\"" ws ":" ws str "," ws "\"tags\"" ws ":" ws "[" ws (str ("," ws str)*)? "]" ws "}"
str  ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F]{4})* "\"" ws
int  ::= "-"? ([0-9] | [1-9] [0-9]{1,15}) ws
ws   ::= [ \t\n]{0,8}
)g";
constexpr std::string_view kPersonDocument =
    "{\"name\": \"Grace Brewster Murray Hopper\", \"age\": 85, \"email\": "
    "\"grace.hopper@navy.example.mil\", \"tags\": [\"COBOL\", \"compilers\", \"rear admiral\", "
    "\"nanosecond wire\"]}";

struct Setup {
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const TokenVocabulary> vocab;
  std::shared_ptr<const Grammar> json, person;
  std::vector<int32_t> json_ids, person_ids;
};

const Setup& setup() {
  static const Setup s = [] {
    Setup s;
    s.tok = load_tokenizer(shared_dir() / "data/tokenizers/llama3/tokenizer.model");
    s.vocab = std::make_shared<const TokenVocabulary>(*s.tok);
    std::string json_gbnf;
    {
      std::FILE* f = std::fopen(SANDWICH_JSON_GBNF, "rb");
      if (!f) throw std::runtime_error(std::string("cannot read ") + SANDWICH_JSON_GBNF);
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) json_gbnf.append(buf, n);
      std::fclose(f);
    }
    s.json = Grammar::parse(json_gbnf);
    s.person = Grammar::parse(kPersonGrammar);
    if (!s.json->accepts(kJsonDocument) || !s.person->accepts(kPersonDocument))
      throw std::runtime_error("bench_grammar: a document does not fit its grammar");
    s.json_ids = s.tok->encode(kJsonDocument, false);
    s.person_ids = s.tok->encode(kPersonDocument, false);
    return s;
  }();
  return s;
}

// `batch` matchers, matcher k starting k * n / batch tokens into the document; each step masks
// and advances all of them, a matcher at the end starting the document again.
struct Batch {
  std::shared_ptr<GrammarAutomaton> automaton;
  std::vector<GrammarMatcher> matchers;
  std::vector<size_t> at;
};

Batch make_batch(std::shared_ptr<GrammarAutomaton> automaton, const std::vector<int32_t>& ids,
                 int batch, int32_t eos) {
  Batch b{automaton, {}, {}};
  for (int k = 0; k < batch; ++k) {
    b.matchers.emplace_back(automaton, std::vector<int32_t>{eos});
    b.at.push_back(ids.size() * k / batch);
    for (size_t i = 0; i < b.at.back(); ++i) b.matchers.back().accept(ids[i]);
  }
  return b;
}

void step(Batch& b, const std::vector<int32_t>& ids, std::vector<float>& logits, int32_t eos) {
  const int32_t n = static_cast<int32_t>(logits.size());
  for (size_t k = 0; k < b.matchers.size(); ++k) {
    if (b.at[k] == ids.size()) {
      b.matchers[k] = GrammarMatcher(b.automaton, {eos});
      b.at[k] = 0;
    }
    b.matchers[k].mask_logits(logits.data(), n);
    benchmark::DoNotOptimize(logits.data());
    b.matchers[k].accept(ids[b.at[k]++]);
  }
}

void run(benchmark::State& state, bool json, bool warm, int batch) {
  const Setup& s = setup();
  const auto& grammar = json ? s.json : s.person;
  const auto& ids = json ? s.json_ids : s.person_ids;
  const int32_t eos = s.tok->eos_id();
  std::vector<float> logits(s.tok->vocab_size(), 0.0f);
  std::shared_ptr<GrammarAutomaton> shared;
  if (warm) {  // one pass of every matcher over the whole document first
    shared = std::make_shared<GrammarAutomaton>(grammar, s.vocab);
    Batch b = make_batch(shared, ids, batch, eos);
    for (size_t i = 0; i < ids.size(); ++i) step(b, ids, logits, eos);
  }
  size_t masks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto automaton = warm ? shared : std::make_shared<GrammarAutomaton>(grammar, s.vocab);
    Batch b = make_batch(automaton, ids, batch, eos);
    state.ResumeTiming();
    for (size_t i = 0; i < ids.size(); ++i) step(b, ids, logits, eos);
    masks += ids.size() * batch;
  }
  state.counters["per_mask"] = benchmark::Counter(
      static_cast<double>(masks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.SetItemsProcessed(static_cast<int64_t>(masks));
}

// A mask inside the "abstract" string of the JSON document, its transitions known but the mask
// itself dropped from the cache before each call: the whole walk of the trie.
void string_uncached(benchmark::State& state) {
  const Setup& s = setup();
  const int32_t n = s.tok->vocab_size();
  std::vector<float> logits(n, 0.0f);
  const auto& ids = s.json_ids;
  size_t inside = 0;
  for (std::string text; inside < ids.size(); ++inside) {
    text += s.tok->piece(ids[inside], 0);
    if (text.find("We constrain sampling") != std::string::npos) break;
  }
  auto automaton = std::make_shared<GrammarAutomaton>(s.json, s.vocab);
  GrammarMatcher m(automaton, {});
  for (size_t i = 0; i <= inside; ++i) {
    m.mask_logits(logits.data(), n);
    m.accept(ids[i]);
  }
  std::fill(logits.begin(), logits.end(), 0.0f);
  m.mask_logits(logits.data(), n);
  size_t allowed = 0;
  for (float x : logits) allowed += x == 0.0f;
  for (auto _ : state) {
    state.PauseTiming();
    automaton->impl().drop_masks();
    state.ResumeTiming();
    m.mask_logits(logits.data(), n);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["allowed_tokens"] = static_cast<double>(allowed);
  state.counters["trie_nodes"] = static_cast<double>(s.vocab->impl().nodes.size() - 1);
}

// A cached mask applied: inside a string (most tokens allowed) and after a key (a few allowed).
void cached(benchmark::State& state, std::string_view prefix) {
  const Setup& s = setup();
  const int32_t n = s.tok->vocab_size();
  std::vector<float> logits(n, 0.0f);
  auto automaton = std::make_shared<GrammarAutomaton>(s.json, s.vocab);
  GrammarMatcher m(automaton, {});
  for (int32_t t : s.tok->encode(prefix, false)) m.accept(t);
  for (auto _ : state) {
    m.mask_logits(logits.data(), n);
    benchmark::DoNotOptimize(logits.data());
  }
}

void vocabulary_build(benchmark::State& state) {
  const Setup& s = setup();
  for (auto _ : state) benchmark::DoNotOptimize(TokenVocabulary(*s.tok).size());
}

void register_all() {
  benchmark::RegisterBenchmark("vocabulary_build", vocabulary_build)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("json/string_uncached", string_uncached)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("json/string_cached", cached, "{\"abstract\": \"We")
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("json/after_key_cached", cached, "{\"abstract\":")
      ->Unit(benchmark::kMicrosecond);
  for (bool json : {true, false})
    for (bool warm : {false, true})
      for (int batch : {1, 16}) {
        std::string name = std::string(json ? "json" : "schema_object") +
                           (warm ? "/warm" : "/cold") + "/batch" + std::to_string(batch);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& st) { run(st, json, warm, batch); })
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.5);
      }
}

}  // namespace
}  // namespace sandwich::engine::grammar

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  sandwich::engine::grammar::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
