#include "bench/prompts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

namespace sandwich::bench {

const std::vector<std::string>& common_words() {
  static const std::vector<std::string> words = {
      "the",    "of",      "and",     "to",    "in",      "is",      "was",    "for",     "that",
      "with",   "on",      "as",      "are",   "by",      "at",      "from",   "his",     "her",
      "this",   "be",      "or",      "had",   "not",     "but",     "have",   "which",   "they",
      "you",    "one",     "all",     "were",  "we",      "their",   "there",  "an",      "has",
      "been",   "more",    "when",    "who",   "will",    "would",   "so",     "if",      "no",
      "out",    "up",      "about",   "into",  "than",    "them",    "can",    "only",    "other",
      "time",   "new",     "some",    "could", "these",   "two",     "may",    "first",   "then",
      "do",     "any",     "like",    "my",    "now",     "over",    "such",   "our",     "man",
      "me",     "even",    "most",    "made",  "after",   "also",    "did",    "many",    "before",
      "must",   "through", "back",    "years", "where",   "much",    "your",   "way",     "well",
      "down",   "should",  "because", "each",  "just",    "those",   "people", "how",     "too",
      "little", "state",   "good",    "very",  "make",    "world",   "still",  "own",     "see",
      "men",    "work",    "long",    "get",   "here",    "between", "both",   "life",    "being",
      "under",  "never",   "day",     "same",  "another", "know",    "while",  "last",    "might",
      "us",     "great",   "old",     "year",  "off",     "come",    "since",  "against", "go",
      "came",   "right",   "used",    "take",  "three"};
  return words;
}

std::string corpus_text(size_t words, uint64_t seed) {
  const auto& w = common_words();
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<size_t> pick(0, w.size() - 1);
  std::uniform_int_distribution<int> sentence(6, 14);
  std::string out;
  out.reserve(words * 6);
  size_t left_in_sentence = 0;
  for (size_t i = 0; i < words; ++i) {
    std::string word = w[pick(rng)];
    if (left_in_sentence == 0) {
      left_in_sentence = static_cast<size_t>(sentence(rng));
      word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    }
    if (!out.empty()) out += ' ';
    out += word;
    if (--left_in_sentence == 0) out += (i % 5 == 4) ? ',' : '.';
  }
  return out;
}

std::string salt_text(int index, uint64_t seed) {
  const auto& w = common_words();
  const size_t n = w.size();
  // Two or three words spell the index in base n, so salts are unique, and one seeded word
  // varies them between runs.
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(index));
  size_t i = static_cast<size_t>(std::max(index, 0));
  std::string s = w[rng() % n];
  do {
    s += ' ' + w[i % n];
    i /= n;
  } while (i > 0);
  if (static_cast<size_t>(std::max(index, 0)) < n) s += ' ' + w[0];
  return s;
}

PromptBuilder::PromptBuilder(TokenizerApi& tokenizer, uint64_t seed)
    : tok_(tokenizer), seed_(seed), rng_(seed) {}

void PromptBuilder::grow_corpus(size_t min_tokens) {
  size_t words = std::max<size_t>(min_tokens + min_tokens / 4 + 256, 1024);
  while (corpus_.size() < min_tokens) {
    const std::vector<int> ids = tok_.tokenize(corpus_text(words, seed_), false);
    if (ids.size() <= corpus_.size())
      throw std::runtime_error("the server's tokenizer returns no tokens for plain text");
    corpus_ = ids;
    words *= 2;
  }
}

BuiltPrompt PromptBuilder::build(int index, int n_tokens) {
  const int n = std::max(n_tokens, 1);
  grow_corpus(static_cast<size_t>(n) + 64);
  std::string salt = salt_text(index, seed_);
  int base = tok_.count_prompt(salt);
  if (base >= n) {  // too short a prompt for a salt; such prompts cannot share a cached block
    salt.clear();
    base = tok_.count_prompt(salt);
  }
  const size_t span = corpus_.size() - static_cast<size_t>(n);
  size_t offset = std::uniform_int_distribution<size_t>(0, span)(rng_);
  auto text_of = [&](int k) {
    if (k <= 0) return salt;
    if (offset + static_cast<size_t>(k) > corpus_.size())
      offset = corpus_.size() - static_cast<size_t>(k);
    std::vector<int> window(corpus_.begin() + static_cast<std::ptrdiff_t>(offset),
                            corpus_.begin() + static_cast<std::ptrdiff_t>(offset) + k);
    std::string body = tok_.detokenize(window);
    return salt.empty() ? body : salt + ' ' + body;
  };

  BuiltPrompt best;
  int best_diff = -1;
  std::set<int> tried;
  int k = n - base;
  for (int round = 0; round < 24; ++round) {
    tried.insert(k);
    std::string text = text_of(k);
    const int count = tok_.count_prompt(text);
    const int diff = std::abs(count - n);
    if (best_diff < 0 || diff < best_diff) {
      best = {std::move(text), count, diff == 0};
      best_diff = diff;
    }
    if (diff == 0) break;
    int next = std::clamp(k + (n - count), 0, static_cast<int>(corpus_.size()));
    if (tried.count(next)) {
      // The count jumps over n at this window's end (a token that splits in two at the seam,
      // say): try another window of the corpus.
      offset = std::uniform_int_distribution<size_t>(0, span)(rng_);
      tried.clear();
    }
    k = next;
  }
  return best;
}

BuiltPrompt approximate_prompt(int index, int n_tokens, uint64_t seed) {
  const auto& w = common_words();
  std::mt19937_64 rng(seed ^ (static_cast<uint64_t>(index) << 20));
  const int words = std::max(n_tokens - 1, 1);  // one BOS token
  std::string salt = salt_text(index, seed);
  const int salt_words = static_cast<int>(std::count(salt.begin(), salt.end(), ' ')) + 1;
  BuiltPrompt p;
  int left = words;
  if (salt_words < words) {
    p.text = salt;
    left -= salt_words;
  }
  for (int i = 0; i < left; ++i) {
    if (!p.text.empty()) p.text += ' ';
    p.text += w[rng() % w.size()];
  }
  p.tokens = words + 1;
  p.exact = false;
  return p;
}

}  // namespace sandwich::bench
