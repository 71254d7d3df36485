// SentencePiece .model files through libsentencepiece. Encoding is the library's own; special
// tokens in the text (with parse_special) are split out first, and each text segment after one
// gets the dummy prefix again, as Hugging Face's Llama tokenizer does.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <stdexcept>

#include "engine/tokenizer.h"
#include "spm_tokenizer.h"
#include "tokenizer_common.h"

namespace sandwich {
namespace {

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
    for (int i = 0; i < n; ++i) {
      pieces_[i] = sp_.IdToPiece(i);
      if (sp_.IsControl(i)) specials_.push_back({pieces_[i], i});
    }
    std::sort(specials_.begin(), specials_.end(),
              [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
    bos_id_ = sp_.bos_id();
    eos_id_ = sp_.eos_id();
    add_bos_ = bos_id_ >= 0;
    if (eos_id_ >= 0) stop_ids_.push_back(eos_id_);
    // The dummy prefix is part of the model's normalizer spec; "▁" + text is what it produces.
    std::vector<std::string> probe;
    sp_.Encode("a", &probe);
    dummy_prefix_ = !probe.empty() && probe[0].rfind("\xe2\x96\x81", 0) == 0;
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
    std::vector<int32_t> out;
    if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
    auto segs = parse_special ? tok::split_specials(text, specials_)
                              : std::vector<tok::Segment>{{text, -1}};
    for (const auto& s : segs) {
      if (s.id >= 0) {
        out.push_back(s.id);
        continue;
      }
      if (s.text.empty()) continue;
      std::vector<int> ids;
      sp_.Encode(std::string(s.text), &ids);
      out.insert(out.end(), ids.begin(), ids.end());
    }
    return out;
  }

  std::string piece(int32_t id, int32_t prev) const override {
    std::string p = raw(id, false);
    if (dummy_prefix_ && (prev < 0 || prev == bos_id_) && !p.empty() && p[0] == ' ') p.erase(0, 1);
    return p;
  }

  std::string decode(std::span<const int32_t> ids, bool keep_special) const override {
    std::string out;
    int32_t prev = -1;
    for (int32_t id : ids) {
      std::string p = raw(id, keep_special);
      if (dummy_prefix_ && (prev < 0 || prev == bos_id_) && !p.empty() && p[0] == ' ')
        p.erase(0, 1);
      out += p;
      prev = id;
    }
    return out;
  }

 private:
  std::string raw(int32_t id, bool keep_special) const {
    if (id < 0 || id >= vocab_size())
      throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary");
    if (sp_.IsControl(id) || sp_.IsUnused(id)) return keep_special ? pieces_[id] : std::string();
    if (sp_.IsUnknown(id)) return keep_special ? pieces_[id] : std::string(" \xe2\x81\x87 ");
    if (sp_.IsByte(id)) {
      const int b = tok::parse_byte_piece(pieces_[id]);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : std::string();
    }
    std::string s;
    const std::string& t = pieces_[id];
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, 3, "\xe2\x96\x81") == 0) {
        s += ' ';
        i += 3;
      } else {
        s += t[i++];
      }
    }
    return s;
  }

  sentencepiece::SentencePieceProcessor sp_;
  std::vector<std::string> pieces_;
  std::vector<std::pair<std::string, int32_t>> specials_;
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
    v.types.push_back(sp.IsUnknown(i)   ? TokenType::Unknown
                      : sp.IsControl(i) ? TokenType::Control
                      : sp.IsUnused(i)  ? TokenType::Unused
                      : sp.IsByte(i)    ? TokenType::Byte
                                        : TokenType::Normal);
  }
  v.bos_id = sp.bos_id();
  v.eos_id = sp.eos_id();
  v.unk_id = sp.unk_id();
  v.pad_id = sp.pad_id();
  return v;
}

}  // namespace sandwich
