#include "text/jinja_lexer.h"

#include <algorithm>
#include <cstring>

namespace sandwich::engine::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // jinja2 reads lines: \r\n and \r become \n, and one trailing newline goes.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    bool strip_next = false;    // the last tag ended with '-'
    bool line_starting = true;  // what the last tag consumed ended a line
    while (pos_ <= src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, (tag == std::string::npos ? src_.size() : tag) - pos_);
      if (strip_next) {
        size_t b = 0;
        while (b < text.size() && is_space(text[b])) ++b;
        text.erase(0, b);
      }
      if (tag == std::string::npos) {
        emit_text(std::move(text), pos_);
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag alone on its line takes the indent with it.
        const size_t nl = text.rfind('\n');
        const size_t l = nl == std::string::npos ? 0 : nl + 1;
        if ((l > 0 || line_starting) && l < text.size() &&
            std::all_of(text.begin() + static_cast<long>(l), text.end(), is_space))
          text.erase(l);
      }
      emit_text(std::move(text), pos_);
      pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      size_t consumed_from;
      if (kind == '#') {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) fail_at(where(tag), "unclosed comment ('{#' without '#}')");
        const char close_sign = end > pos_ ? src_[end - 1] : '\0';
        strip_next = close_sign == '-';
        pos_ = end + 2;
        consumed_from = end;
        if (close_sign != '-' && close_sign != '+') trim_newline();
      } else {
        const bool block = kind == '%';
        tokens_.push_back(
            {block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, {}, where(tag)});
        const size_t first = tokens_.size();
        char close_sign = '\0';
        lex_expression(block ? '%' : '}', tag, close_sign);
        consumed_from = pos_;
        pos_ += 2;
        strip_next = close_sign == '-';
        if (block && !strip_next && close_sign != '+') trim_newline();
        if (block && tokens_.size() == first + 2 && tokens_[first].kind == Token::Kind::Name &&
            tokens_[first].text == "raw") {
          lex_raw(tag);
          strip_next = false;
        }
      }
      if (strip_next) {
        // jinja2 eats the whitespace with the tag: whether a line starts depends on its end.
        size_t e = pos_;
        while (e < src_.size() && is_space(src_[e])) ++e;
        line_starting = e > pos_ ? src_[e - 1] == '\n' : false;
      } else {
        line_starting = pos_ > consumed_from && src_[pos_ - 1] == '\n';
      }
    }
    tokens_.push_back({Token::Kind::End, {}, where(src_.size())});
    return std::move(tokens_);
  }

 private:
  Where where(size_t off) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off) - 1;
    return {static_cast<int>(it - line_starts_.begin()) + 1, static_cast<int>(off - *it) + 1};
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return std::string::npos;
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), where(at)});
  }

  void trim_newline() {
    if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
  }

  // Tokens up to the closing "}}" or "%}" (pos_ left on it); close_sign: a '-' or '+' before it.
  void lex_expression(char closer, size_t tag, char& close_sign) {
    const Token::Kind end_kind = closer == '%' ? Token::Kind::BlockEnd : Token::Kind::VarEnd;
    int depth = 0;  // brackets: "}}" inside a dict literal is two closing braces
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size())
        fail_at(where(tag), closer == '%' ? "unclosed tag ('{%' without '%}')"
                                          : "unclosed expression ('{{' without '}}')");
      const char c = src_[pos_];
      if ((c == '-' || c == '+') && src_.compare(pos_ + 1, 1, std::string(1, closer)) == 0 &&
          src_.compare(pos_ + 2, 1, "}") == 0 && depth == 0) {
        close_sign = c;
        tokens_.push_back({end_kind, {}, where(pos_)});
        ++pos_;
        return;
      }
      if (c == closer && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}' && depth == 0) {
        tokens_.push_back({end_kind, {}, where(pos_)});
        return;
      }
      const Where w = where(pos_);
      if (is_name_start(c)) {
        size_t e = pos_ + 1;
        while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
        tokens_.push_back({Token::Kind::Name, src_.substr(pos_, e - pos_), w});
        pos_ = e;
      } else if (is_digit(c)) {
        lex_number(w);
      } else if (c == '\'' || c == '"') {
        lex_string(w);
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                           "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                           "]",  "{",  "}",  ".",  ",",  ":",  "|"};
        const char* op = nullptr;
        for (const char* o : kOps)
          if (src_.compare(pos_, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        if (!op) fail_at(w, std::string("unexpected character '") + c + "'");
        if (*op == '(' || *op == '[' || *op == '{') ++depth;
        if ((*op == ')' || *op == ']' || *op == '}') && depth > 0) --depth;
        tokens_.push_back({Token::Kind::Op, op, w});
        pos_ += std::strlen(op);
      }
    }
  }

  void lex_number(Where w) {
    size_t e = pos_;
    bool is_float = false;
    auto digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
    };
    digits();
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && is_digit(src_[x])) {
        is_float = true;
        e = x;
        digits();
      }
    }
    std::string t = src_.substr(pos_, e - pos_);
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, t, w});
    pos_ = e;
  }

  // Python's escapes, as jinja2 reads string literals (unknown ones stay as written).
  void lex_string(Where w) {
    const char q = src_[pos_++];
    std::string out;
    for (;;) {
      if (pos_ >= src_.size()) fail_at(w, "unterminated string");
      const char c = src_[pos_++];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) fail_at(w, "unterminated string");
      const char e = src_[pos_++];
      auto hex = [&](int n) {
        uint32_t cp = 0;
        for (int i = 0; i < n; ++i) {
          if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
            fail_at(w, "bad \\x, \\u or \\U escape in a string");
          const char h = src_[pos_++];
          cp = cp * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        if (cp > 0x10FFFF) fail_at(w, "bad \\U escape in a string");
        append_utf8(out, cp);
      };
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case 'a':
          out += '\a';
          break;
        case '0':
          out += '\0';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case '\n':
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        default:
          out += '\\';
          out += e;
      }
    }
    tokens_.push_back({Token::Kind::String, std::move(out), w});
  }

  // {% raw %}: everything up to {% endraw %} is text.
  void lex_raw(size_t tag) {
    for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 2)) {
      size_t i = at + 2;
      const bool strip_before = i < src_.size() && src_[i] == '-';
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") != 0) continue;
      i += 6;
      while (i < src_.size() && is_space(src_[i])) ++i;
      const bool strip_after = i < src_.size() && src_[i] == '-';
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
      if (src_.compare(i, 2, "%}") != 0) continue;
      // The raw tag's own tokens go: the parser sees the text alone.
      tokens_.resize(tokens_.size() - 3);
      std::string text = src_.substr(pos_, at - pos_);
      if (strip_before)
        while (!text.empty() && is_space(text.back())) text.pop_back();
      emit_text(std::move(text), pos_);
      pos_ = i + 2;
      if (strip_after)
        while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      else
        trim_newline();
      return;
    }
    fail_at(where(tag), "'raw' without 'endraw'");
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

void fail_at(Where w, const std::string& what) {
  throw Error("line " + std::to_string(w.line) + ", column " + std::to_string(w.column) + ": " +
              what);
}

std::vector<Token> lex(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace sandwich::engine::jinja
