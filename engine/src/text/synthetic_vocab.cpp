// Synthetic vocabularies for dummy-weight models: valid, deterministic, any size.
#include <stdexcept>
#include <unordered_set>

#include "engine/text/tokenizer.h"
#include "text/tokenizer_common.h"
#include "text/vocab_files.h"

namespace sandwich::engine {
namespace {

// Printable ASCII, letters first: the order in which pieces are created (and ranked).
std::string alphabet() {
  std::string a;
  for (char c = 'a'; c <= 'z'; ++c) a += c;
  for (char c = 'A'; c <= 'Z'; ++c) a += c;
  for (char c = '0'; c <= '9'; ++c) a += c;
  for (char c = '!'; c <= '~'; ++c)
    if (!std::isalnum(static_cast<unsigned char>(c))) a += c;
  return a;
}

Vocab synthetic_spm(int32_t n) {
  if (n < 3 + 256 + 1)
    throw std::invalid_argument("a SentencePiece vocabulary needs at least 260 tokens");
  Vocab v;
  v.kind = Vocab::Kind::SentencePiece;
  auto add = [&](const std::string& t, TokenType type) {
    v.tokens.push_back(t);
    v.types.push_back(type);
    v.scores.push_back(type == TokenType::Normal ? -static_cast<float>(v.tokens.size()) : 0.0f);
  };
  add("<unk>", TokenType::Unknown);
  add("<s>", TokenType::Control);
  add("</s>", TokenType::Control);
  for (int b = 0; b < 256; ++b)
    add(tok::byte_piece_name(static_cast<unsigned char>(b)), TokenType::Byte);
  // Pieces of growing length over "▁" + printable ASCII; every prefix of a piece is a piece, so
  // the score-ordered merges can build each of them.
  const std::string& mark = tok::kSpaceMark;
  std::vector<std::string> symbols = {mark};
  for (char c : alphabet()) symbols.push_back(std::string(1, c));
  std::vector<std::string> level = symbols;
  std::unordered_set<std::string> have;
  while (static_cast<int32_t>(v.tokens.size()) < n) {
    std::vector<std::string> next;
    for (const auto& p : level) {
      if (static_cast<int32_t>(v.tokens.size()) >= n) break;
      if (have.insert(p).second) add(p, TokenType::Normal);
      for (const auto& s : symbols)
        if (s != mark) next.push_back(p + s);
    }
    level = std::move(next);
  }
  tok::use_llama_spm_ids(v);
  return v;
}

Vocab synthetic_bpe(int32_t n) {
  const int32_t n_special = n >= 4096 ? 256 : 16;
  if (n < 256 + n_special + 1)
    throw std::invalid_argument("a byte-level BPE vocabulary needs at least 273 tokens");
  Vocab v;
  v.kind = Vocab::Kind::ByteLevelBPE;
  v.pre = "llama-bpe";
  const auto& b2u = tok::byte_to_unicode();
  for (int b = 0; b < 256; ++b) v.tokens.push_back(b2u[b]);
  const int32_t n_normal = n - n_special;
  // Pairs, then triples, of printable ASCII (with a leading space first, as words start), each
  // built by one merge of two existing tokens.
  const std::string alpha = alphabet();
  std::vector<std::string> level;
  for (char c : " " + alpha) level.push_back(std::string(1, c));
  std::unordered_set<std::string> have;
  for (auto& t : level) have.insert(t);
  while (static_cast<int32_t>(v.tokens.size()) < n_normal) {
    std::vector<std::string> next;
    for (const auto& left : level) {
      for (char c : alpha) {
        if (static_cast<int32_t>(v.tokens.size()) >= n_normal) break;
        const std::string t = left + c;
        if (!have.insert(t).second) continue;
        std::string ul, ur;
        for (unsigned char x : left) ul += b2u[x];
        ur = b2u[static_cast<unsigned char>(c)];
        v.tokens.push_back(ul + ur);
        v.merges.push_back(ul + " " + ur);
        next.push_back(t);
      }
    }
    level = std::move(next);
  }
  v.types.assign(v.tokens.size(), TokenType::Normal);
  append_llama3_special_tokens(v, n_special);
  return v;
}

}  // namespace

Vocab make_synthetic_vocab(Vocab::Kind kind, int32_t n_tokens) {
  return kind == Vocab::Kind::SentencePiece ? synthetic_spm(n_tokens) : synthetic_bpe(n_tokens);
}

}  // namespace sandwich::engine
