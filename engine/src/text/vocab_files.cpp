// Vocabularies from tokenizer files: llama2.c tokenizer.bin, Llama-3 tiktoken ranks, and
// Hugging Face tokenizer.json.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/bounded_file.h"
#include "common/json_file.h"
#include "engine/formats/mapped_file.h"
#include "engine/formats/model_config.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "text/tokenizer_common.h"
#include "text/vocab_files.h"

namespace sandwich::engine {

void append_llama3_special_tokens(Vocab& v, int count) {
  const char* named[] = {"<|begin_of_text|>",
                         "<|end_of_text|>",
                         "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>",
                         "<|reserved_special_token_2|>",
                         "<|reserved_special_token_3|>",
                         "<|start_header_id|>",
                         "<|end_header_id|>",
                         "<|reserved_special_token_4|>",
                         "<|eot_id|>"};
  const int32_t base = static_cast<int32_t>(v.tokens.size());
  for (int i = 0; i < count; ++i) {
    v.tokens.push_back(i < 10 ? named[i]
                              : "<|reserved_special_token_" + std::to_string(i - 5) + "|>");
    v.types.push_back(TokenType::Control);
  }
  v.bos_id = base;
  v.eos_id = base + 1;
  v.eot_id = base + 9;
  v.add_bos = true;
  v.add_space_prefix = false;
}

namespace fs = std::filesystem;
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = base64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return true;
}

std::string to_byte_level(const std::string& bytes) {
  const auto& b2u = tok::byte_to_unicode();
  std::string s;
  for (unsigned char c : bytes) s += b2u[c];
  return s;
}

}  // namespace

bool looks_like_tiktoken(const fs::path& path) {
  // The first line only, and not more of it than a rank line can take: the file may be anything.
  std::ifstream in(path, std::ios::binary);
  std::string line(4096, '\0');
  in.read(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<size_t>(in.gcount()));
  const size_t eol = line.find('\n');
  if (eol == std::string::npos) return false;
  line.resize(eol);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t sp = line.find(' ');
  if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size()) return false;
  for (size_t i = 0; i < sp; ++i)
    if (base64_value(line[i]) < 0 && line[i] != '=') return false;
  for (size_t i = sp + 1; i < line.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(line[i]))) return false;
  return true;
}

Vocab vocab_from_llama2c(const fs::path& path) {
  MappedFile f(path);
  const std::string where = path.string();
  const uint8_t* p = f.data();
  size_t n = f.size(), pos = 0;
  auto need = [&](size_t k) {
    if (k > n - pos)
      throw std::runtime_error(where + ": truncated llama2.c tokenizer at byte " +
                               std::to_string(pos));
  };
  need(4);
  int32_t max_len;
  std::memcpy(&max_len, p, 4);
  pos = 4;
  if (max_len <= 0 || max_len > 4096)
    throw std::runtime_error(where + ": not a llama2.c tokenizer (bad max token length)");
  Vocab v;
  v.kind = Vocab::Kind::SentencePiece;
  while (pos < n) {
    need(8);
    float score;
    int32_t len;
    std::memcpy(&score, p + pos, 4);
    std::memcpy(&len, p + pos + 4, 4);
    pos += 8;
    if (len < 0 || len > max_len)
      throw std::runtime_error(where + ": corrupt llama2.c tokenizer (token length " +
                               std::to_string(len) + ")");
    need(static_cast<size_t>(len));
    std::string piece(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    const int32_t id = static_cast<int32_t>(v.tokens.size());
    TokenType t = TokenType::Normal;
    if (id == tok::kLlamaUnkId)
      t = TokenType::Unknown;
    else if (id == tok::kLlamaBosId || id == tok::kLlamaEosId)
      t = TokenType::Control;
    else if (tok::parse_byte_piece(piece) >= 0)
      t = TokenType::Byte;
    v.tokens.push_back(t == TokenType::Normal ? tok::spaces_to_marks(piece) : piece);
    v.scores.push_back(score);
    v.types.push_back(t);
  }
  if (v.tokens.size() < 3 + 256)
    throw std::runtime_error(where + ": not a llama2.c tokenizer (" +
                             std::to_string(v.tokens.size()) + " tokens)");
  tok::use_llama_spm_ids(v);
  // llama2.c models delimit stories with BOS and run.c stops when it samples one.
  v.eot_id = v.bos_id;
  return v;
}

// Hugging Face's rule for turning tiktoken ranks into merges: every split of a token into two
// tokens is a merge, ordered by the token's rank and then by the ranks of the two parts.
static std::vector<std::string> merges_from_ranks(const std::vector<std::string>& bytes_of_rank) {
  std::unordered_map<std::string, int32_t> rank;
  for (size_t i = 0; i < bytes_of_rank.size(); ++i)
    rank.emplace(bytes_of_rank[i], static_cast<int32_t>(i));
  std::vector<std::string> merges;
  for (size_t r = 0; r < bytes_of_rank.size(); ++r) {
    const std::string& t = bytes_of_rank[r];
    if (t.size() < 2) continue;
    std::vector<std::tuple<int32_t, int32_t, size_t>> local;
    for (size_t i = 1; i < t.size(); ++i) {
      auto a = rank.find(t.substr(0, i)), b = rank.find(t.substr(i));
      if (a != rank.end() && b != rank.end()) local.emplace_back(a->second, b->second, i);
    }
    std::sort(local.begin(), local.end());
    for (auto& [ra, rb, i] : local)
      merges.push_back(to_byte_level(t.substr(0, i)) + " " + to_byte_level(t.substr(i)));
  }
  return merges;
}

Vocab vocab_from_tiktoken(const fs::path& path, bool with_merges) {
  std::istringstream in(read_bounded_file(path, file_kinds::kTokenizer));
  std::vector<std::string> bytes_of_rank;
  std::string line, bytes;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || !base64_decode(std::string_view(line).substr(0, sp), bytes))
      throw std::runtime_error(path.string() + ":" + std::to_string(lineno) +
                               ": not a tiktoken 'base64 rank' line");
    const long rank = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    if (rank != static_cast<long>(bytes_of_rank.size()))
      throw std::runtime_error(path.string() + ":" + std::to_string(lineno) +
                               ": ranks must run 0, 1, 2, ...");
    bytes_of_rank.push_back(bytes);
  }
  if (bytes_of_rank.size() < 256)
    throw std::runtime_error(path.string() + ": too few tiktoken ranks");
  Vocab v;
  v.kind = Vocab::Kind::ByteLevelBPE;
  v.pre = "llama-bpe";
  for (auto& b : bytes_of_rank) v.tokens.push_back(to_byte_level(b));
  v.types.assign(v.tokens.size(), TokenType::Normal);
  if (with_merges) v.merges = merges_from_ranks(bytes_of_rank);
  // Llama-3's 256 special tokens follow the ranks (see the tokenizer's README).
  append_llama3_special_tokens(v, 256);
  return v;
}

namespace {

std::string token_string(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return {};
}

bool mentions(const nlohmann::json& j, const std::string& needle) {
  return !j.is_null() && j.dump().find(needle) != std::string::npos;
}

// A token id from tokenizer.json, range-checked before narrowing: the vocabulary is sized by
// the largest id, so a negative or huge one must not reach a resize.
int32_t token_id(const nlohmann::json& id, const std::string& what, const std::string& where) {
  const bool in_range =
      id.is_number_unsigned()  ? id.get<uint64_t>() < static_cast<uint64_t>(kMaxVocab)
      : id.is_number_integer() ? id.get<int64_t>() >= 0 && id.get<int64_t>() < kMaxVocab
                               : false;
  if (!in_range)
    throw std::runtime_error(where + ": " + what + " has id " + id.dump() +
                             "; ids must be integers from 0 to " + std::to_string(kMaxVocab - 1));
  return static_cast<int32_t>(id.get<int64_t>());
}

Vocab vocab_from_tokenizer_json_unchecked(const fs::path& path);

}  // namespace

Vocab vocab_from_tokenizer_json(const fs::path& path) {
  try {
    return vocab_from_tokenizer_json_unchecked(path);
  } catch (const nlohmann::json::exception& e) {
    // A field of an unexpected type (a number where a string belongs): name the file at least.
    throw std::runtime_error(path.string() + ": unexpected content (" + e.what() + ")");
  }
}

namespace {

// The tokens by id: the BPE model's vocab, then the added tokens; ids nobody names are unused.
Vocab tokens_by_id(const nlohmann::json& j, const nlohmann::json& m, const std::string& where) {
  std::map<int32_t, std::pair<std::string, TokenType>> by_id;
  for (auto& [tok, id] : m["vocab"].items())
    by_id[token_id(id, "vocab token '" + tok + "'", where)] = {tok, TokenType::Normal};
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content")) continue;
      if (!a["content"].is_string())
        throw std::runtime_error(where + ": added token " + a["id"].dump() +
                                 " has non-string content " + a["content"].dump());
      const std::string content = a["content"].get<std::string>();
      const bool special =
          a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
      by_id[token_id(a["id"], "added token '" + content + "'", where)] = {
          content, special ? TokenType::Control : TokenType::UserDefined};
    }
  Vocab v;
  const int32_t n = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
  v.tokens.resize(n);
  v.types.assign(n, TokenType::Unused);
  for (int32_t i = 0; i < n; ++i) v.tokens[i] = "<unused_" + std::to_string(i) + ">";
  for (auto& [id, t] : by_id) {
    v.tokens[id] = t.first;
    v.types[id] = t.second;
  }
  return v;
}

// "a b" per merge, from either form tokenizer.json writes: "a b" or ["a", "b"].
std::vector<std::string> merges_of(const nlohmann::json& m) {
  std::vector<std::string> merges;
  if (m.contains("merges") && m["merges"].is_array())
    for (auto& e : m["merges"]) {
      if (e.is_string())
        merges.push_back(e.get<std::string>());
      else if (e.is_array() && e.size() == 2)
        merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());
    }
  return merges;
}

void set_sentencepiece_style(Vocab& v, const nlohmann::json& j, const nlohmann::json& m,
                             const std::vector<std::string>& merges) {
  const int32_t n = static_cast<int32_t>(v.tokens.size());
  v.kind = Vocab::Kind::SentencePiece;
  // Merge order is the score order SentencePiece trained; turn ranks back into scores.
  v.scores.assign(n, 0.0f);
  std::unordered_map<std::string, int32_t> id_of;
  for (int32_t i = 0; i < n; ++i) id_of.emplace(v.tokens[i], i);
  for (size_t r = 0; r < merges.size(); ++r) {
    const size_t sp = merges[r].find(' ', 1);
    if (sp == std::string::npos) continue;
    auto it = id_of.find(merges[r].substr(0, sp) + merges[r].substr(sp + 1));
    if (it != id_of.end() && v.scores[it->second] == 0.0f)
      v.scores[it->second] = -static_cast<float>(r + 1);
  }
  for (int32_t i = 0; i < n; ++i) {
    if (v.types[i] != TokenType::Normal) continue;
    if (tok::parse_byte_piece(v.tokens[i]) >= 0) v.types[i] = TokenType::Byte;
  }
  if (m.contains("unk_token") && m["unk_token"].is_string()) {
    auto it = id_of.find(m["unk_token"].get<std::string>());
    if (it != id_of.end()) {
      v.unk_id = it->second;
      v.types[it->second] = TokenType::Unknown;
    }
  }
  v.add_space_prefix = mentions(j.value("normalizer", nlohmann::json()), "Prepend") ||
                       mentions(j.value("pre_tokenizer", nlohmann::json()), "Metaspace");
}

void set_byte_level_style(Vocab& v, const nlohmann::json& j, const nlohmann::json& m,
                          std::vector<std::string> merges) {
  v.kind = Vocab::Kind::ByteLevelBPE;
  v.merges = std::move(merges);
  v.add_space_prefix = false;
  const auto& pre = j.value("pre_tokenizer", nlohmann::json());
  std::function<void(const nlohmann::json&)> find_regex = [&](const nlohmann::json& p) {
    if (p.is_object() && p.value("type", "") == "Split" && p.contains("pattern") &&
        p["pattern"].contains("Regex"))
      v.pre_regex = p["pattern"]["Regex"].get<std::string>();
    if (p.is_object() && p.contains("pretokenizers"))
      for (auto& q : p["pretokenizers"]) find_regex(q);
  };
  find_regex(pre);
  if (m.value("ignore_merges", false) || v.pre_regex.find("\\p{N}{1,3}") != std::string::npos)
    v.pre = "llama-bpe";
}

// Special ids and settings live in tokenizer_config.json / generation_config.json beside it.
void read_special_tokens(Vocab& v, const nlohmann::json& j, const fs::path& dir) {
  const int32_t n = static_cast<int32_t>(v.tokens.size());
  auto id_of_text = [&](const std::string& s) -> int32_t {
    for (int32_t i = 0; i < n; ++i)
      if (v.tokens[i] == s) return i;
    return -1;
  };
  bool add_bos_known = false;
  if (fs::exists(dir / "tokenizer_config.json")) {
    const auto c = read_json_file(dir / "tokenizer_config.json", file_kinds::kModelMetadata);
    if (c.contains("bos_token")) v.bos_id = id_of_text(token_string(c["bos_token"]));
    if (c.contains("eos_token")) v.eos_id = id_of_text(token_string(c["eos_token"]));
    if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean()) {
      v.add_bos = c["add_bos_token"].get<bool>();
      add_bos_known = true;
    }
    if (c.contains("chat_template")) v.chat_template = chat_template_of_config(c["chat_template"]);
  }
  if (v.bos_id < 0)
    for (const char* s : {"<|begin_of_text|>", "<s>", "<|startoftext|>"})
      if ((v.bos_id = id_of_text(s)) >= 0) break;
  if (v.eos_id < 0)
    for (const char* s : {"<|end_of_text|>", "</s>", "<|endoftext|>"})
      if ((v.eos_id = id_of_text(s)) >= 0) break;
  if (!add_bos_known)
    v.add_bos =
        v.bos_id >= 0 && mentions(j.value("post_processor", nlohmann::json()), v.tokens[v.bos_id]);
  if (fs::exists(dir / "generation_config.json")) {
    const auto g = read_json_file(dir / "generation_config.json", file_kinds::kModelMetadata);
    if (g.contains("eos_token_id") && g["eos_token_id"].is_array())
      for (auto& e : g["eos_token_id"]) {
        const int64_t id = e.is_number_integer() ? e.get<int64_t>() : -1;
        if (id >= 0 && id < n && id != v.eos_id) v.eot_id = static_cast<int32_t>(id);
      }
  }
  if (v.eot_id < 0) v.eot_id = id_of_text("<|eot_id|>");
}

Vocab vocab_from_tokenizer_json_unchecked(const fs::path& path) {
  const nlohmann::json j = read_json_file(path, file_kinds::kTokenizer);
  const std::string where = path.string();
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw std::runtime_error(where + ": not a tokenizer.json (no \"model\")");
  const auto& m = j["model"];
  if (m.value("type", "") != "BPE")
    throw std::runtime_error(where + ": unsupported tokenizer model '" +
                             m.value("type", std::string("?")) + "' (supported: BPE)");
  if (!m.contains("vocab") || !m["vocab"].is_object())
    throw std::runtime_error(where + ": the BPE model has no vocab");
  Vocab v = tokens_by_id(j, m, where);
  std::vector<std::string> merges = merges_of(m);
  const bool spm_style = m.value("byte_fallback", false) ||
                         mentions(j.value("normalizer", nlohmann::json()), "\xe2\x96\x81") ||
                         mentions(j.value("pre_tokenizer", nlohmann::json()), "Metaspace");
  if (spm_style)
    set_sentencepiece_style(v, j, m, merges);
  else
    set_byte_level_style(v, j, m, std::move(merges));
  read_special_tokens(v, j, path.parent_path());
  return v;
}

}  // namespace

}  // namespace sandwich::engine
