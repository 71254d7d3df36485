// SentencePiece .model files through libsentencepiece. Encoding is the library's own; special
// tokens in the text (with parse_special) are split out first, and each text segment after one
// gets the dummy prefix again, as Hugging Face's Llama tokenizer does.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <stdexcept>

#include "engine/text/tokenizer.h"
#include "text/spm_tokenizer.h"
#include "text/tokenizer_common.h"

namespace sandwich::engine {
namespace {

TokenType type_of(const sentencepiece::SentencePieceProcessor& sp, int id) {
  return sp.IsUnknown(id)   ? TokenType::Unknown
         : sp.IsControl(id) ? TokenType::Control
         : sp.IsUnused(id)  ? TokenType::Unused
         : sp.IsByte(id)    ? TokenType::Byte
                            : TokenType::Normal;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::filesystem::path& path) {
    const auto st = sp_.Load(path.string());
    if (!st.ok())
      throw std::runtime_error(path.string() + ": not a valid SentencePiece model (" +
                               st.ToString() + ")");
    const int n = sp_.GetPieceSize();
    if (n <= 0) throw std::runtime_error(path.string() + ": the SentencePiece model has no pieces");
    pieces_.resize(n);
    types_.resize(n);
    for (int i = 0; i < n; ++i) {
      pieces_[i] = sp_.IdToPiece(i);
      types_[i] = type_of(sp_, i);
      if (sp_.IsControl(i)) specials_.push_back({pieces_[i], i});
    }
    tok::sort_longest_first(specials_);
    bos_id_ = sp_.bos_id();
    eos_id_ = sp_.eos_id();
    add_bos_ = bos_id_ >= 0;
    if (eos_id_ >= 0) stop_ids_.push_back(eos_id_);
    // The dummy prefix is part of the model's normalizer spec; "▁" + text is what it produces.
    std::vector<std::string> probe;
    sp_.Encode("a", &probe);
    dummy_prefix_ = !probe.empty() && probe[0].rfind(tok::kSpaceMark, 0) == 0;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  std::string_view token_text(int32_t id) const override { return pieces_.at(id); }
  bool is_special(int32_t id) const override {
    return sp_.IsControl(id) || sp_.IsUnknown(id) || sp_.IsUnused(id);
  }
  int32_t token_id(std::string_view text) const override {
    const int id = sp_.PieceToId(std::string(text));
    return id == sp_.unk_id() && text != pieces_[id] ? -1 : id;
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special) const override {
    return tok::encode_around_specials(
        text, add_bos, bos_id_, parse_special, specials_,
        [&](std::string_view plain, bool, std::vector<int32_t>& out) {
          std::vector<int> ids;
          sp_.Encode(std::string(plain), &ids);
          out.insert(out.end(), ids.begin(), ids.end());
        });
  }

  std::string piece(int32_t id, int32_t prev) const override {
    return decoder().piece(id, prev, false);
  }
  std::string decode(std::span<const int32_t> ids, bool keep_special) const override {
    return decoder().decode(ids, keep_special);
  }

 private:
  tok::SpmDecoder decoder() const { return {pieces_, types_, bos_id_, dummy_prefix_}; }

  sentencepiece::SentencePieceProcessor sp_;
  std::vector<std::string> pieces_;
  std::vector<TokenType> types_;
  tok::Specials specials_;
  bool dummy_prefix_ = true;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::filesystem::path& p) {
  return std::make_unique<SentencePieceTokenizer>(p);
}

// The vocabulary of a SentencePiece model, for embedding in a GGUF file.
Vocab vocab_from_sentencepiece(const std::filesystem::path& path) {
  sentencepiece::SentencePieceProcessor sp;
  const auto st = sp.Load(path.string());
  if (!st.ok())
    throw std::runtime_error(path.string() + ": not a valid SentencePiece model (" + st.ToString() +
                             ")");
  Vocab v;
  v.kind = Vocab::Kind::SentencePiece;
  const int n = sp.GetPieceSize();
  for (int i = 0; i < n; ++i) {
    v.tokens.push_back(sp.IdToPiece(i));
    v.scores.push_back(sp.GetScore(i));
    v.types.push_back(type_of(sp, i));
  }
  v.bos_id = sp.bos_id();
  v.eos_id = sp.eos_id();
  v.unk_id = sp.unk_id();
  v.pad_id = sp.pad_id();
  return v;
}

}  // namespace sandwich::engine
