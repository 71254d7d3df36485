#include "text/tokenizer_common.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

namespace sandwich::engine::tok {

void sort_longest_first(Specials& specials) {
  std::sort(specials.begin(), specials.end(),
            [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
}

std::vector<Segment> split_specials(std::string_view text, const Specials& specials) {
  std::vector<Segment> out;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int32_t>* hit = nullptr;
    for (const auto& sp : specials)  // sorted longest first
      if (!sp.first.empty() && text.compare(i, sp.first.size(), sp.first) == 0) {
        hit = &sp;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({text.substr(i, hit->first.size()), hit->second});
    i += hit->first.size();
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
  return out;
}

std::string encode_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return s;
}

const std::vector<std::string>& byte_to_unicode() {
  static const std::vector<std::string> map = [] {
    std::vector<std::string> m(256);
    std::vector<bool> direct(256, false);
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xa1; b <= 0xac; ++b) direct[b] = true;
    for (int b = 0xae; b <= 0xff; ++b) direct[b] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) m[b] = encode_utf8(direct[b] ? static_cast<uint32_t>(b) : next++);
    return m;
  }();
  return map;
}

bool unicode_to_bytes(std::string_view s, std::string& out) {
  static const std::unordered_map<std::string, unsigned char> inv = [] {
    std::unordered_map<std::string, unsigned char> m;
    const auto& fwd = byte_to_unicode();
    for (int b = 0; b < 256; ++b) m[fwd[b]] = static_cast<unsigned char>(b);
    return m;
  }();
  for (size_t i = 0; i < s.size();) {
    const size_t n = std::min(utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
    auto it = inv.find(std::string(s.substr(i, n)));
    if (it == inv.end()) return false;
    out += static_cast<char>(it->second);
    i += n;
  }
  return true;
}

std::string byte_piece_name(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

int parse_byte_piece(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else
      return -1;
  }
  return v;
}

void check_token_id(int32_t id, int32_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary");
}

std::string spaces_to_marks(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ')
      out += kSpaceMark;
    else
      out += c;
  }
  return out;
}

std::string marks_to_spaces(std::string_view piece) {
  std::string s;
  s.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      s += ' ';
      i += kSpaceMark.size();
    } else {
      s += piece[i++];
    }
  }
  return s;
}

std::string SpmDecoder::bytes(int32_t id, bool keep_special) const {
  check_token_id(id, static_cast<int32_t>(pieces.size()));
  const std::string& t = pieces[id];
  switch (types[id]) {
    case TokenType::Byte: {
      const int b = parse_byte_piece(t);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : std::string();
    }
    case TokenType::Control:
    case TokenType::Unused:
      return keep_special ? t : std::string();
    case TokenType::Unknown:
      return keep_special ? t : std::string(" \xe2\x81\x87 ");  // " ⁇ ", as sentencepiece
    default:
      return marks_to_spaces(t);
  }
}

std::string SpmDecoder::piece(int32_t id, int32_t prev, bool keep_special) const {
  std::string p = bytes(id, keep_special);
  if (dummy_prefix && (prev < 0 || prev == bos_id) && !p.empty() && p[0] == ' ') p.erase(0, 1);
  return p;
}

std::string SpmDecoder::decode(std::span<const int32_t> ids, bool keep_special) const {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    out += piece(id, prev, keep_special);
    prev = id;
  }
  return out;
}

void use_llama_spm_ids(Vocab& v) {
  v.unk_id = kLlamaUnkId;
  v.bos_id = kLlamaBosId;
  v.eos_id = kLlamaEosId;
  v.add_bos = true;
  v.add_space_prefix = true;
}

VocabTokenizer::VocabTokenizer(Vocab v, bool scored) : v_(std::move(v)) {
  const int32_t n = vocab_size();
  if (n == 0) throw std::runtime_error("the vocabulary is empty");
  if (v_.types.empty()) v_.types.assign(n, TokenType::Normal);
  if (scored) {
    if (v_.scores.empty()) v_.scores.assign(n, 0.0f);
    if (static_cast<int32_t>(v_.types.size()) != n || static_cast<int32_t>(v_.scores.size()) != n)
      throw std::runtime_error("vocabulary arrays differ in length (tokens, scores, types)");
  } else if (static_cast<int32_t>(v_.types.size()) != n) {
    throw std::runtime_error("vocabulary arrays differ in length");
  }
  for (int32_t i = 0; i < n; ++i)
    if (v_.types[i] == TokenType::Control || v_.types[i] == TokenType::UserDefined)
      specials_.push_back({v_.tokens[i], i});
  sort_longest_first(specials_);
  bos_id_ = v_.bos_id;
  eos_id_ = v_.eos_id;
  add_bos_ = v_.add_bos && v_.bos_id >= 0;
  if (v_.eos_id >= 0) stop_ids_.push_back(v_.eos_id);
  chat_template_ = v_.chat_template;
}

bool VocabTokenizer::is_special(int32_t id) const {
  const TokenType t = v_.types.at(id);
  return t == TokenType::Control || t == TokenType::Unused || t == TokenType::Unknown;
}

}  // namespace sandwich::engine::tok
