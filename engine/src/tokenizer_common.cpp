#include "tokenizer_common.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace sandwich::tok {

std::vector<Segment> split_specials(std::string_view text,
                                    const std::vector<std::pair<std::string, int32_t>>& specials) {
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

}  // namespace sandwich::tok
