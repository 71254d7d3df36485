// Score-based SentencePiece BPE over a vocabulary (GGUF "llama" vocabularies, llama2.c
// tokenizer.bin, SPM-style tokenizer.json): the pair whose merged piece scores highest merges
// first, leftmost on ties; characters no piece covers fall back to <0xHH> byte tokens.
#include <algorithm>
#include <array>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "engine/text/tokenizer.h"
#include "text/spm_tokenizer.h"
#include "text/tokenizer_common.h"

namespace sandwich::engine {
namespace {

class SpmTokenizer : public tok::VocabTokenizer {
 public:
  explicit SpmTokenizer(Vocab v) : VocabTokenizer(std::move(v), true) {
    byte_ids_.fill(-1);
    for (int32_t i = 0; i < vocab_size(); ++i) {
      const TokenType t = v_.types[i];
      if (t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Undefined)
        lookup_.emplace(v_.tokens[i], i);
      if (t == TokenType::Byte) {
        const int b = tok::parse_byte_piece(v_.tokens[i]);
        if (b >= 0) byte_ids_[b] = i;
      }
    }
    if (v_.eot_id >= 0 && v_.eot_id != v_.eos_id) stop_ids_.push_back(v_.eot_id);
  }

  int32_t token_id(std::string_view text) const override {
    for (size_t i = 0; i < v_.tokens.size(); ++i)
      if (v_.tokens[i] == text) return static_cast<int32_t>(i);
    return -1;
  }
  void add_stop_id(int32_t id) { stop_ids_.push_back(id); }

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    return tok::encode_around_specials(
        text, add_bos, bos_id_, parse_special, specials_,
        [&](std::string_view plain, bool after_special, std::vector<int32_t>& out) {
          encode_plain(plain, v_.add_space_prefix && after_special, out);
        });
  }

  std::string piece(int32_t id, int32_t prev) const override {
    return decoder().piece(id, prev, false);
  }
  std::string decode(std::span<const int32_t> ids, bool keep_special) const override {
    return decoder().decode(ids, keep_special);
  }

 private:
  tok::SpmDecoder decoder() const { return {v_.tokens, v_.types, bos_id_, v_.add_space_prefix}; }

  struct Symbol {
    int prev, next;
    size_t start, len;
  };
  struct Bigram {
    float score;
    int left;
    size_t len;  // merged length when queued; stale entries are skipped
    bool operator<(const Bigram& o) const {
      return score < o.score || (score == o.score && left > o.left);
    }
  };

  void encode_plain(std::string_view text, bool prefix, std::vector<int32_t>& out) const {
    const std::string s = (prefix ? tok::kSpaceMark : "") + tok::spaces_to_marks(text);
    std::vector<Symbol> sym;
    for (size_t i = 0; i < s.size();) {
      const size_t n = std::min(tok::utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
      sym.push_back({static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1, i, n});
      i += n;
    }
    if (sym.empty()) return;
    sym.back().next = -1;
    std::priority_queue<Bigram> q;
    auto try_add = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      auto it = lookup_.find(s.substr(sym[l].start, sym[l].len + sym[r].len));
      if (it == lookup_.end()) return;
      q.push({v_.scores[it->second], l, sym[l].len + sym[r].len});
    };
    for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) try_add(i, i + 1);
    while (!q.empty()) {
      const Bigram b = q.top();
      q.pop();
      Symbol& l = sym[b.left];
      if (l.len == 0 || l.next < 0) continue;
      Symbol& r = sym[l.next];
      if (l.len + r.len != b.len) continue;  // one side changed since it was queued
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }
    for (int i = 0; i >= 0; i = sym[i].next) {
      const std::string piece = s.substr(sym[i].start, sym[i].len);
      auto it = lookup_.find(piece);
      if (it != lookup_.end()) {
        out.push_back(it->second);
        continue;
      }
      for (unsigned char c : piece)
        out.push_back(byte_ids_[c] >= 0 ? byte_ids_[c] : v_.unk_id >= 0 ? v_.unk_id : 0);
    }
  }

  std::unordered_map<std::string, int32_t> lookup_;
  std::array<int32_t, 256> byte_ids_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, std::vector<int32_t> extra_stop_ids) {
  auto t = std::make_unique<SpmTokenizer>(std::move(v));
  for (int32_t id : extra_stop_ids) t->add_stop_id(id);
  return t;
}

}  // namespace sandwich::engine
