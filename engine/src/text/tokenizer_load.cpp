// Picking the right tokenizer for a file or folder, by its content.
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/bounded_file.h"
#include "common/json_file.h"

#include "engine/formats/gguf.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "text/spm_tokenizer.h"
#include "text/vocab_files.h"

namespace sandwich::engine {
namespace fs = std::filesystem;
namespace {

enum class Kind { Gguf, SentencePiece, Tiktoken, TokenizerJson, Llama2c };

std::string head(const fs::path& p, size_t n) {
  std::ifstream in(p, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// A file or the tokenizer file inside a model folder.
std::pair<fs::path, Kind> resolve(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "tokenizer.json")) return {path / "tokenizer.json", Kind::TokenizerJson};
    if (fs::exists(path / "tokenizer.model")) return resolve(path / "tokenizer.model");
    if (fs::exists(path / "tokenizer.bin")) {
      check_bounded_file(path / "tokenizer.bin", file_kinds::kTokenizer);
      return {path / "tokenizer.bin", Kind::Llama2c};
    }
    throw std::runtime_error(
        path.string() + ": no tokenizer.json, tokenizer.model or tokenizer.bin in this folder");
  }
  if (!fs::exists(path, ec))
    throw std::runtime_error("tokenizer " + path.string() + " does not exist");
  // Before anything opens it: a FIFO would block the open, a device would never end.
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error("tokenizer " + path.string() + " is not a regular file");
  if (fs::file_size(path, ec) == 0)
    throw std::runtime_error("tokenizer " + path.string() + " is empty");
  const std::string h = head(path, 8);
  if (h.rfind("GGUF", 0) == 0) return {path, Kind::Gguf};  // mapped, as large as a model
  Kind kind = Kind::Llama2c;
  const size_t first = h.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && h[first] == '{')
    kind = Kind::TokenizerJson;
  else if (looks_like_tiktoken(path))
    kind = Kind::Tiktoken;
  // SentencePiece's ModelProto starts with field 1 (pieces), a length-delimited message: 0x0a.
  else if (!h.empty() && h[0] == 0x0a)
    kind = Kind::SentencePiece;
  // Read whole (SentencePiece by its library), or (tokenizer.bin) parsed into as many strings.
  check_bounded_file(path, file_kinds::kTokenizer);
  return {path, kind};
}

void attach_config_template(Tokenizer& t, const fs::path& file) {
  const fs::path cfg = file.parent_path() / "tokenizer_config.json";
  if (!t.chat_template().empty() || !fs::exists(cfg)) return;
  try {
    const auto j = read_json_file(cfg, file_kinds::kModelMetadata);
    if (j.contains("chat_template"))
      t.set_chat_template(chat_template_of_config(j["chat_template"]));
  } catch (const std::exception&) {
    // The template is optional: an unreadable file (even a directory by that name) means none.
  }
}

}  // namespace

std::unique_ptr<Tokenizer> make_tokenizer(Vocab v) {
  if (v.add_bos && v.bos_id < 0)
    throw std::runtime_error("the vocabulary asks for a BOS token but names none");
  if (v.kind == Vocab::Kind::SentencePiece) {
    std::vector<int32_t> extra;
    return make_spm_tokenizer(std::move(v), extra);
  }
  return make_bpe_tokenizer(std::move(v));
}

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path) {
  try {
    auto [file, kind] = resolve(path);
    std::unique_ptr<Tokenizer> t;
    switch (kind) {
      case Kind::Gguf:
        t = make_tokenizer(vocab_from_gguf(gguf::Reader(file)));
        break;
      case Kind::SentencePiece:
        t = make_sentencepiece_tokenizer(file);
        break;
      case Kind::Tiktoken:
        t = make_tokenizer(vocab_from_tiktoken(file, false));
        break;
      case Kind::TokenizerJson:
        t = make_tokenizer(vocab_from_tokenizer_json(file));
        break;
      case Kind::Llama2c:
        t = make_tokenizer(vocab_from_llama2c(file));
        break;
    }
    attach_config_template(*t, file);
    return t;
  } catch (const std::exception& e) {
    // Any failure (a JSON type error, an allocation a corrupt file provoked) names the file.
    const std::string msg = e.what();
    if (msg.find(path.string()) != std::string::npos ||
        msg.find(path.filename().string()) != std::string::npos)
      throw;
    throw std::runtime_error(path.string() + ": " + msg);
  }
}

Vocab vocab_from_tokenizer_file(const fs::path& path) {
  auto [file, kind] = resolve(path);
  switch (kind) {
    case Kind::Gguf:
      return vocab_from_gguf(gguf::Reader(file));
    case Kind::SentencePiece:
      return vocab_from_sentencepiece(file);
    case Kind::Tiktoken:
      return vocab_from_tiktoken(file, true);
    case Kind::TokenizerJson:
      return vocab_from_tokenizer_json(file);
    case Kind::Llama2c:
      return vocab_from_llama2c(file);
  }
  throw std::logic_error("unreachable");
}

std::string IncrementalDecoder::push(int32_t id) {
  if (keep_special_ && tok_.is_special(id))
    pending_ += tok_.token_text(id);
  else
    pending_ += tok_.piece(id, prev_);
  prev_ = id;
  // Emit everything up to the last complete UTF-8 sequence; bytes that can never start or
  // continue a valid sequence become U+FFFD at once.
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const unsigned char c = static_cast<unsigned char>(pending_[i]);
    size_t need = c < 0x80           ? 1
                  : (c >> 5) == 0x6  ? 2
                  : (c >> 4) == 0xe  ? 3
                  : (c >> 3) == 0x1e ? 4
                                     : 0;
    if (need == 0) {  // stray continuation byte or invalid lead byte
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    size_t k = 1;
    while (k < need && i + k < pending_.size() &&
           (static_cast<unsigned char>(pending_[i + k]) & 0xc0) == 0x80)
      ++k;
    if (k == need) {
      // Overlong or out-of-range sequences are invalid too.
      const unsigned char c1 = need > 1 ? static_cast<unsigned char>(pending_[i + 1]) : 0;
      const bool bad = (need == 2 && c < 0xc2) || (need == 3 && c == 0xe0 && c1 < 0xa0) ||
                       (need == 3 && c == 0xed && c1 >= 0xa0) ||
                       (need == 4 && c == 0xf0 && c1 < 0x90) ||
                       (need == 4 && (c > 0xf4 || (c == 0xf4 && c1 >= 0x90)));
      if (bad)
        out += "\xef\xbf\xbd";
      else
        out.append(pending_, i, need);
      i += need;
      continue;
    }
    if (i + k == pending_.size()) break;  // incomplete: wait for more bytes
    out += "\xef\xbf\xbd";                // interrupted sequence
    i += k;
  }
  pending_.erase(0, i);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  if (!pending_.empty()) out = "\xef\xbf\xbd";
  pending_.clear();
  return out;
}

}  // namespace sandwich::engine
