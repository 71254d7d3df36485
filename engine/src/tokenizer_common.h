#pragma once
// Pieces shared by the tokenizer implementations (private to engine/).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandwich::tok {

// Length of the UTF-8 sequence starting with byte c (1 for invalid lead bytes).
inline size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xe) return 3;
  if ((c >> 3) == 0x1e) return 4;
  return 1;
}

// Splits text around special-token strings (longest match first). Each segment is either plain
// text (id -1) or one special token.
struct Segment {
  std::string_view text;
  int32_t id;
};
std::vector<Segment> split_specials(std::string_view text,
                                    const std::vector<std::pair<std::string, int32_t>>& specials);

// GPT-2's reversible map between bytes and printable unicode characters (as UTF-8 strings).
const std::vector<std::string>& byte_to_unicode();
// Decodes a byte-level token string back to bytes; false if a character is not in the map.
bool unicode_to_bytes(std::string_view s, std::string& out);

std::string byte_piece_name(unsigned char b);  // "<0x0A>"
int parse_byte_piece(std::string_view s);      // 0..255, or -1 if s is not "<0xHH>"

std::string encode_utf8(uint32_t cp);

}  // namespace sandwich::tok
