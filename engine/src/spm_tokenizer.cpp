// Score-based SentencePiece BPE over a vocabulary (GGUF "llama" vocabularies, llama2.c
// tokenizer.bin, SPM-style tokenizer.json): the pair whose merged piece scores highest merges
// first, leftmost on ties; characters no piece covers fall back to <0xHH> byte tokens.
#include <algorithm>
#include <array>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "engine/tokenizer.h"
#include "spm_tokenizer.h"
#include "tokenizer_common.h"

namespace sandwich {
namespace {

const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary

class SpmTokenizer : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocab v) : v_(std::move(v)) {
    const int32_t n = static_cast<int32_t>(v_.tokens.size());
    if (n == 0) throw std::runtime_error("the vocabulary is empty");
    if (v_.types.empty()) v_.types.assign(n, TokenType::Normal);
    if (v_.scores.empty()) v_.scores.assign(n, 0.0f);
    if (static_cast<int32_t>(v_.types.size()) != n || static_cast<int32_t>(v_.scores.size()) != n)
      throw std::runtime_error("vocabulary arrays differ in length (tokens, scores, types)");
    byte_ids_.fill(-1);
    for (int32_t i = 0; i < n; ++i) {
      const TokenType t = v_.types[i];
      if (t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Undefined)
        lookup_.emplace(v_.tokens[i], i);
      if (t == TokenType::Byte) {
        const int b = tok::parse_byte_piece(v_.tokens[i]);
        if (b >= 0) byte_ids_[b] = i;
      }
      if (t == TokenType::Control || t == TokenType::UserDefined)
        specials_.push_back({v_.tokens[i], i});
    }
    std::sort(specials_.begin(), specials_.end(),
              [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
    bos_id_ = v_.bos_id;
    eos_id_ = v_.eos_id;
    add_bos_ = v_.add_bos && v_.bos_id >= 0;
    if (v_.eos_id >= 0) stop_ids_.push_back(v_.eos_id);
    if (v_.eot_id >= 0 && v_.eot_id != v_.eos_id) stop_ids_.push_back(v_.eot_id);
    chat_template_ = v_.chat_template;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(v_.tokens.size()); }
  std::string_view token_text(int32_t id) const override { return v_.tokens.at(id); }
  bool is_special(int32_t id) const override {
    const TokenType t = v_.types.at(id);
    return t == TokenType::Control || t == TokenType::Unknown || t == TokenType::Unused;
  }
  int32_t token_id(std::string_view text) const override {
    for (size_t i = 0; i < v_.tokens.size(); ++i)
      if (v_.tokens[i] == text) return static_cast<int32_t>(i);
    return -1;
  }
  void add_stop_id(int32_t id) { stop_ids_.push_back(id); }

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    std::vector<int32_t> out;
    if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
    bool prev_special = true;  // the dummy prefix goes at the start and after special tokens
    auto segs = parse_special ? tok::split_specials(text, specials_)
                              : std::vector<tok::Segment>{{text, -1}};
    for (const auto& s : segs) {
      if (s.id >= 0) {
        out.push_back(s.id);
        prev_special = true;
        continue;
      }
      if (s.text.empty()) continue;
      encode_plain(s.text, v_.add_space_prefix && prev_special, out);
      prev_special = false;
    }
    return out;
  }

  std::string piece(int32_t id, int32_t prev) const override {
    std::string p = raw_piece(id, false);
    if (v_.add_space_prefix && (prev < 0 || prev == bos_id_) && !p.empty() && p[0] == ' ')
      p.erase(0, 1);
    return p;
  }

  std::string decode(std::span<const int32_t> ids, bool keep_special) const override {
    std::string out;
    int32_t prev = -1;
    for (int32_t id : ids) {
      std::string p = raw_piece(id, keep_special);
      if (v_.add_space_prefix && (prev < 0 || prev == bos_id_) && !p.empty() && p[0] == ' ')
        p.erase(0, 1);
      out += p;
      prev = id;
    }
    return out;
  }

 private:
  std::string raw_piece(int32_t id, bool keep_special) const {
    if (id < 0 || id >= vocab_size())
      throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary");
    const std::string& t = v_.tokens[id];
    switch (v_.types[id]) {
      case TokenType::Byte: {
        const int b = tok::parse_byte_piece(t);
        return b >= 0 ? std::string(1, static_cast<char>(b)) : std::string();
      }
      case TokenType::Control:
      case TokenType::Unused:
        return keep_special ? t : std::string();
      case TokenType::Unknown:
        return keep_special ? t : std::string(" \xe2\x81\x87 ");  // " ⁇ ", as sentencepiece
      default:
        break;
    }
    std::string s;
    s.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kSpace.size(), kSpace) == 0) {
        s += ' ';
        i += kSpace.size();
      } else {
        s += t[i++];
      }
    }
    return s;
  }

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
    std::string s;
    s.reserve(text.size() + 3);
    if (prefix) s += kSpace;
    for (char c : text) {
      if (c == ' ')
        s += kSpace;
      else
        s += c;
    }
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

  Vocab v_;
  std::unordered_map<std::string, int32_t> lookup_;
  std::array<int32_t, 256> byte_ids_;
  std::vector<std::pair<std::string, int32_t>> specials_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, std::vector<int32_t> extra_stop_ids) {
  auto t = std::make_unique<SpmTokenizer>(std::move(v));
  for (int32_t id : extra_stop_ids) t->add_stop_id(id);
  return t;
}

}  // namespace sandwich
