#pragma once
// Pieces shared by the tokenizer implementations (private to engine/).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/text/tokenizer.h"

namespace sandwich::engine::tok {

// Length of the UTF-8 sequence starting with byte c (1 for invalid lead bytes).
inline size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xe) return 3;
  if ((c >> 3) == 0x1e) return 4;
  return 1;
}

// Special tokens as (text, id), longest text first: the order split_specials matches them in.
using Specials = std::vector<std::pair<std::string, int32_t>>;
void sort_longest_first(Specials& specials);

// Splits text around special-token strings (longest match first). Each segment is either plain
// text (id -1) or one special token.
struct Segment {
  std::string_view text;
  int32_t id;
};
std::vector<Segment> split_specials(std::string_view text, const Specials& specials);

// encode() as every tokenizer does it: BOS first when asked for (and there is one), with
// parse_special each special-token string as its id, and each non-empty stretch of plain text
// through encode_text(text, after_special, out). after_special is true at the start and right
// after a special token: where SentencePiece puts its dummy prefix.
template <class EncodeText>
std::vector<int32_t> encode_around_specials(std::string_view text, bool add_bos, int32_t bos_id,
                                            bool parse_special, const Specials& specials,
                                            EncodeText&& encode_text) {
  std::vector<int32_t> out;
  if (add_bos && bos_id >= 0) out.push_back(bos_id);
  const auto segments =
      parse_special ? split_specials(text, specials) : std::vector<Segment>{{text, -1}};
  bool after_special = true;
  for (const auto& s : segments) {
    if (s.id >= 0) {
      out.push_back(s.id);
      after_special = true;
    } else if (!s.text.empty()) {
      encode_text(s.text, after_special, out);
      after_special = false;
    }
  }
  return out;
}

// Throws std::out_of_range unless 0 <= id < vocab_size.
void check_token_id(int32_t id, int32_t vocab_size);

// U+2581 ("▁"), SentencePiece's word boundary: a space, in SPM pieces.
inline const std::string kSpaceMark = "\xe2\x96\x81";
std::string spaces_to_marks(std::string_view text);
std::string marks_to_spaces(std::string_view piece);

// SentencePiece's decoding, shared by the library-backed and the score-based SPM tokenizers:
// "▁" is a space, a <0xHH> piece its byte, control and unused pieces nothing and the unknown
// piece " ⁇ " (unless keep_special: then they are their own text), and where the vocabulary
// adds a dummy prefix, its space is dropped at the start of the text and right after BOS.
struct SpmDecoder {
  const std::vector<std::string>& pieces;
  const std::vector<TokenType>& types;
  int32_t bos_id;
  bool dummy_prefix;

  // The bytes piece `id` adds after `prev` (-1 at the start).
  std::string piece(int32_t id, int32_t prev, bool keep_special) const;
  std::string decode(std::span<const int32_t> ids, bool keep_special) const;

 private:
  std::string bytes(int32_t id, bool keep_special) const;
};

// Llama's SentencePiece layout, which llama2.c's tokenizer.bin and our synthetic SPM
// vocabularies follow: <unk>, then <s> (BOS, added to every prompt), then </s> (EOS); text gets
// the dummy prefix.
inline constexpr int32_t kLlamaUnkId = 0, kLlamaBosId = 1, kLlamaEosId = 2;
void use_llama_spm_ids(Vocab& v);

// What the tokenizers over a Vocab (score-based SPM, byte-level BPE) share: the vocabulary
// checked (no types means all Normal; with `scored`, no scores means all 0), its special tokens
// (control and user-defined, longest first), BOS, EOS as a stop token, and the chat template.
class VocabTokenizer : public Tokenizer {
 public:
  int32_t vocab_size() const override { return static_cast<int32_t>(v_.tokens.size()); }
  std::string_view token_text(int32_t id) const override { return v_.tokens.at(id); }
  // Control, unused and unknown tokens.
  bool is_special(int32_t id) const override;

 protected:
  VocabTokenizer(Vocab v, bool scored);

  Vocab v_;
  Specials specials_;
};

// GPT-2's reversible map between bytes and printable unicode characters (as UTF-8 strings).
const std::vector<std::string>& byte_to_unicode();
// Decodes a byte-level token string back to bytes; false if a character is not in the map.
bool unicode_to_bytes(std::string_view s, std::string& out);

std::string byte_piece_name(unsigned char b);  // "<0x0A>"
int parse_byte_piece(std::string_view s);      // 0..255, or -1 if s is not "<0xHH>"

std::string encode_utf8(uint32_t cp);

}  // namespace sandwich::engine::tok
