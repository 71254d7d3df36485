// Byte-level BPE (Llama-3, GPT-2 style): a regex pre-tokenizer splits the text, each piece's
// bytes map to printable characters, and adjacent pairs merge by rank (lowest first) — by the
// merges list when the vocabulary has one, else by the rank of the merged token (tiktoken).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <memory>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "engine/text/tokenizer.h"
#include "text/spm_tokenizer.h"
#include "text/tokenizer_common.h"

namespace sandwich::engine {
namespace {

// Llama-3's pre-tokenizer.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Regex {
 public:
  explicit Regex(const std::string& pattern) {
    int err;
    PCRE2_SIZE off;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, nullptr);
    if (!code_) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw std::runtime_error("invalid pre-tokenizer pattern at offset " + std::to_string(off) +
                               ": " + reinterpret_cast<char*>(msg));
    }
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls fn(piece) for each match; text between matches (none for these patterns) too.
  template <class F>
  void split(std::string_view text, F&& fn) const {
    // Owned, so that fn throwing (a vocabulary that cannot encode a piece) does not leak it.
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> owned(
        pcre2_match_data_create_from_pattern(code_, nullptr), &pcre2_match_data_free);
    pcre2_match_data* md = owned.get();
    size_t pos = 0;
    while (pos < text.size()) {
      const int rc = jit_ ? pcre2_jit_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()),
                                            text.size(), pos, 0, md, nullptr)
                          : pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()),
                                        text.size(), pos, 0, md, nullptr);
      if (rc < 0) {
        fn(text.substr(pos));
        break;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      if (ov[0] > pos) fn(text.substr(pos, ov[0] - pos));
      if (ov[1] == ov[0]) {  // empty match: step one character to make progress
        const size_t n =
            std::min(tok::utf8_len(static_cast<unsigned char>(text[pos])), text.size() - pos);
        fn(text.substr(pos, n));
        pos += n;
        continue;
      }
      fn(text.substr(ov[0], ov[1] - ov[0]));
      pos = ov[1];
    }
  }

 private:
  pcre2_code* code_ = nullptr;
  bool jit_ = false;
};

class BpeTokenizer : public tok::VocabTokenizer {
 public:
  explicit BpeTokenizer(Vocab v) : VocabTokenizer(std::move(v), false) {
    for (int32_t i = 0; i < vocab_size(); ++i)
      if (v_.types[i] != TokenType::Control && v_.types[i] != TokenType::UserDefined)
        lookup_.emplace(v_.tokens[i], i);
    const auto& b2u = tok::byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      auto it = lookup_.find(b2u[b]);
      byte_ids_[b] = it == lookup_.end() ? -1 : it->second;
    }
    for (size_t r = 0; r < v_.merges.size(); ++r) {
      const std::string& m = v_.merges[r];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) throw std::runtime_error("malformed merge '" + m + "'");
      auto a = lookup_.find(m.substr(0, sp)), b = lookup_.find(m.substr(sp + 1)),
           c = lookup_.find(m.substr(0, sp) + m.substr(sp + 1));
      if (a == lookup_.end() || b == lookup_.end() || c == lookup_.end()) continue;
      merges_.emplace(key(a->second, b->second),
                      std::make_pair(static_cast<int32_t>(r), c->second));
    }
    const std::string pattern =
        !v_.pre_regex.empty()                                                   ? v_.pre_regex
        : (v_.pre == "llama-bpe" || v_.pre == "llama3" || v_.pre == "llama-v3") ? kLlama3Pattern
                                                                                : kGpt2Pattern;
    regex_ = std::make_unique<Regex>(pattern);
    // Llama-3 keeps a pre-token that is itself in the vocabulary whole (llama.cpp's ignore_merges).
    whole_words_ = v_.pre == "llama-bpe" || v_.pre == "llama3" || v_.merges.empty();
    for (const char* s : {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}) {
      auto it =
          std::find_if(specials_.begin(), specials_.end(), [&](auto& p) { return p.first == s; });
      if (it != specials_.end() &&
          std::find(stop_ids_.begin(), stop_ids_.end(), it->second) == stop_ids_.end())
        stop_ids_.push_back(it->second);
    }
    if (v_.eot_id >= 0 &&
        std::find(stop_ids_.begin(), stop_ids_.end(), v_.eot_id) == stop_ids_.end())
      stop_ids_.push_back(v_.eot_id);
  }

  int32_t token_id(std::string_view text) const override {
    for (auto& [s, id] : specials_)
      if (s == text) return id;
    auto it = lookup_.find(std::string(text));
    return it == lookup_.end() ? -1 : it->second;
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    return tok::encode_around_specials(
        text, add_bos, bos_id_, parse_special, specials_,
        [&](std::string_view plain, bool, std::vector<int32_t>& out) {
          regex_->split(plain, [&](std::string_view piece) { encode_piece(piece, out); });
        });
  }

  std::string piece(int32_t id, int32_t /*prev*/) const override { return raw_piece(id, false); }

  std::string decode(std::span<const int32_t> ids, bool keep_special) const override {
    std::string out;
    for (int32_t id : ids) out += raw_piece(id, keep_special);
    return out;
  }

 private:
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::string raw_piece(int32_t id, bool keep_special) const {
    tok::check_token_id(id, vocab_size());
    const std::string& t = v_.tokens[id];
    const TokenType ty = v_.types[id];
    if (ty == TokenType::Control || ty == TokenType::Unused || ty == TokenType::Unknown)
      return keep_special ? t : std::string();
    if (ty == TokenType::UserDefined) return t;
    std::string bytes;
    if (!tok::unicode_to_bytes(t, bytes)) return t;  // not byte-level text: emit as is
    return bytes;
  }

  // Rank and result of merging tokens a and b, or rank -1.
  std::pair<int32_t, int32_t> merge_of(int32_t a, int32_t b) const {
    if (!v_.merges.empty()) {
      auto it = merges_.find(key(a, b));
      return it == merges_.end() ? std::make_pair(-1, -1) : it->second;
    }
    auto it = lookup_.find(v_.tokens[a] + v_.tokens[b]);
    return it == lookup_.end() ? std::make_pair(-1, -1) : std::make_pair(it->second, it->second);
  }

  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
    const auto& b2u = tok::byte_to_unicode();
    if (whole_words_) {
      std::string u;
      for (unsigned char c : piece) u += b2u[c];
      auto it = lookup_.find(u);
      if (it != lookup_.end()) {
        out.push_back(it->second);
        return;
      }
    }
    struct Sym {
      int32_t id;
      int prev, next;
    };
    std::vector<Sym> sym;
    sym.reserve(piece.size());
    for (unsigned char c : piece) {
      if (byte_ids_[c] < 0)
        throw std::runtime_error("the vocabulary has no token for byte " + std::to_string(c));
      sym.push_back(
          {byte_ids_[c], static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
    }
    if (sym.empty()) return;
    sym.back().next = -1;
    struct Cand {
      int32_t rank;
      int left;
      int32_t left_id, right_id;
      bool operator<(const Cand& o) const {
        return rank > o.rank || (rank == o.rank && left > o.left);
      }
    };
    std::priority_queue<Cand> q;
    auto consider = [&](int l) {
      if (l < 0 || sym[l].next < 0) return;
      auto [rank, res] = merge_of(sym[l].id, sym[sym[l].next].id);
      if (rank >= 0) q.push({rank, l, sym[l].id, sym[sym[l].next].id});
    };
    for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) consider(i);
    while (!q.empty()) {
      const Cand c = q.top();
      q.pop();
      Sym& l = sym[c.left];
      if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;  // stale
      Sym& r = sym[l.next];
      l.id = merge_of(l.id, r.id).second;
      r.id = -2;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = c.left;
      consider(l.prev);
      consider(c.left);
    }
    for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
  }

  std::unordered_map<std::string, int32_t> lookup_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::array<int32_t, 256> byte_ids_{};
  std::unique_ptr<Regex> regex_;
  bool whole_words_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab v) {
  return std::make_unique<BpeTokenizer>(std::move(v));
}

}  // namespace sandwich::engine
