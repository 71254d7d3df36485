// Regex (the ECMAScript subset guided_regex and JSON Schema patterns use) to GBNF: parsed to a
// small tree of character sets, sequences, alternatives and repeats, then written as rules.
#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <vector>

#include "engine/grammar/grammar.h"
#include "grammar/codepoint_set.h"
#include "grammar/json_text_gbnf.h"
#include "text/tokenizer_common.h"

namespace sandwich::engine::grammar {

namespace {

// Counts above this are not expanded: a larger maximum is read as unbounded (the model stops long
// before), a larger minimum is refused.
constexpr int kMaxCount = 1000;
// The grammar a regex may expand to (characters, with repeats multiplied out).
constexpr long kMaxWeight = 200000;
constexpr int kMaxNesting = 200;
constexpr size_t kMaxPatternBytes =
    size_t{64} << 10;  // groups in groups: the parser and writer recurse on them

struct Node {
  enum Kind { kChars, kSeq, kAlt, kRepeat } kind = kSeq;
  CodepointSet chars;
  std::vector<Node> kids;
  int min = 0, max = 0;  // kRepeat; max -1: unbounded
};

CodepointSet digits() {
  return CodepointSet::range('0', '9');
}
CodepointSet word_chars() {
  CodepointSet s = CodepointSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CodepointSet space_chars() {  // ECMAScript's \s
  CodepointSet s = CodepointSet::range(9, 13);
  for (uint32_t cp : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu})
    s.add(cp, cp);
  s.add(0x2000, 0x200A);
  return s;
}
CodepointSet dot_chars() {  // anything but a line terminator
  CodepointSet s = CodepointSet::of('\n');
  s.add('\r', '\r');
  s.add(0x2028, 0x2029);
  return s.complement();
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, std::string where) : where_(std::move(where)) {
    if (pattern.size() > kMaxPatternBytes)
      throw GrammarError(where_ + ": the pattern is longer than " +
                         std::to_string(kMaxPatternBytes >> 10) + " KiB");
    for (size_t pos = 0; pos < pattern.size();)
      cps_.push_back(next_code_point(pattern, pos, where_));
  }

  // The top level: alternatives, each with its own anchors.
  struct Branch {
    Node node;
    bool start_anchored = false, end_anchored = false;
  };
  std::vector<Branch> parse_top() {
    std::vector<Branch> branches;
    while (true) {
      Branch b;
      if (peek('^')) ++i_, b.start_anchored = true;
      b.node = parse_seq(true);
      if (peek('$')) ++i_, b.end_anchored = true;
      branches.push_back(std::move(b));
      if (i_ >= cps_.size()) break;
      if (peek('|')) {
        ++i_;
        continue;
      }
      if (peek(')')) fail("unmatched ')'");
      fail("'" + tok::encode_utf8(cps_[i_]) + "' here");  // a '$' before the end
    }
    return branches;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError(where_ + ": " + what + " (at character " + std::to_string(i_) +
                       ") is not supported");
  }
  [[noreturn]] void syntax(const std::string& what) const {
    throw GrammarError(where_ + ": " + what + " at character " + std::to_string(i_));
  }
  bool peek(uint32_t c) const { return i_ < cps_.size() && cps_[i_] == c; }
  bool peek_at(size_t k, uint32_t c) const { return i_ + k < cps_.size() && cps_[i_ + k] == c; }

  Node parse_alt() {
    Node alt{Node::kAlt};
    alt.kids.push_back(parse_seq(false));
    while (peek('|')) {
      ++i_;
      alt.kids.push_back(parse_seq(false));
    }
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Node parse_seq(bool top) {
    Node seq{Node::kSeq};
    while (i_ < cps_.size() && !peek('|') && !peek(')')) {
      if (peek('$')) {
        // Only at the end of a top-level branch.
        if (top && (i_ + 1 == cps_.size() || peek_at(1, '|'))) break;
        fail("the anchor '$' inside the pattern");
      }
      if (peek('^')) fail("the anchor '^' inside the pattern");
      Node atom = parse_atom();
      seq.kids.push_back(parse_quantifiers(std::move(atom)));
    }
    return seq;
  }

  Node parse_quantifiers(Node atom) {
    while (i_ < cps_.size()) {
      int min, max;
      if (peek('*'))
        min = 0, max = -1, ++i_;
      else if (peek('+'))
        min = 1, max = -1, ++i_;
      else if (peek('?'))
        min = 0, max = 1, ++i_;
      else if (peek('{') && read_braces(min, max)) {
      } else
        break;
      if (peek('?')) ++i_;  // lazy: the same language
      if (peek('+')) fail("a possessive quantifier");
      if (max != -1 && min > max) syntax("a count {m,n} with m > n");
      if (min > kMaxCount)
        fail("a repeat count over " + std::to_string(kMaxCount) + " (" + std::to_string(min) + ")");
      if (max > kMaxCount) max = -1;
      Node rep{Node::kRepeat};
      rep.min = min;
      rep.max = max;
      rep.kids.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  // {m}, {m,}, {m,n}; false (nothing consumed) when the brace is a literal one.
  bool read_braces(int& min, int& max) {
    size_t k = i_ + 1;
    auto number = [&](int& out) {
      const size_t start = k;
      long v = 0;
      while (k < cps_.size() && cps_[k] >= '0' && cps_[k] <= '9') {
        v = std::min<long>(v * 10 + (cps_[k] - '0'), INT_MAX / 2);
        ++k;
      }
      out = static_cast<int>(v);
      return k > start;
    };
    if (!number(min)) return false;
    max = min;
    if (k < cps_.size() && cps_[k] == ',') {
      ++k;
      if (!number(max)) max = -1;
    }
    if (k >= cps_.size() || cps_[k] != '}') return false;
    i_ = k + 1;
    return true;
  }

  Node chars(CodepointSet s) {
    Node n{Node::kChars};
    n.chars = std::move(s);
    return n;
  }

  Node parse_atom() {
    const uint32_t c = cps_[i_];
    if (c == '(') {
      if (++nesting_ > kMaxNesting)
        fail("groups nested deeper than " + std::to_string(kMaxNesting));
      ++i_;
      if (peek('?')) {
        if (peek_at(1, ':'))
          i_ += 2;
        else if (peek_at(1, '=') || peek_at(1, '!'))
          fail("a lookahead (?= or (?!");
        else if (peek_at(1, '<') && (peek_at(2, '=') || peek_at(2, '!')))
          fail("a lookbehind (?<= or (?<!");
        else if (peek_at(1, '<') || (peek_at(1, 'P') && peek_at(2, '<'))) {
          while (i_ < cps_.size() && !peek('>')) ++i_;  // a named group: the name is not needed
          if (!peek('>')) syntax("an unterminated group name");
          ++i_;
        } else {
          fail("the group or flag syntax '(?'");
        }
      }
      Node inner = parse_alt();
      if (!peek(')')) syntax("a missing ')'");
      ++i_;
      --nesting_;
      return inner;
    }
    if (c == '*' || c == '+' || c == '?')
      syntax("nothing to repeat before '" + std::string(1, c) + "'");
    if (c == '{') {
      int a, b;
      if (read_braces(a, b)) syntax("nothing to repeat before '{'");
    }
    ++i_;
    if (c == '.') return chars(dot_chars());
    if (c == '[') return chars(parse_class());
    if (c == '\\') return chars(parse_escape(false));
    return chars(CodepointSet::of(c));
  }

  uint32_t hex_digits(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k, ++i_) {
      if (i_ >= cps_.size() || !isxdigit(static_cast<int>(cps_[i_] < 128 ? cps_[i_] : 0)))
        syntax("a bad hex escape");
      const uint32_t d = cps_[i_];
      v = v * 16 + (d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After the backslash. In a class, \b is a backspace and \B, \1 are errors as well.
  CodepointSet parse_escape(bool in_class) {
    if (i_ >= cps_.size()) syntax("a trailing backslash");
    const uint32_t c = cps_[i_++];
    switch (c) {
      case 'd':
        return digits();
      case 'D':
        return digits().complement();
      case 'w':
        return word_chars();
      case 'W':
        return word_chars().complement();
      case 's':
        return space_chars();
      case 'S':
        return space_chars().complement();
      case 'n':
        return CodepointSet::of('\n');
      case 'r':
        return CodepointSet::of('\r');
      case 't':
        return CodepointSet::of('\t');
      case 'f':
        return CodepointSet::of('\f');
      case 'v':
        return CodepointSet::of('\v');
      case '0':
        if (i_ < cps_.size() && cps_[i_] >= '0' && cps_[i_] <= '9') fail("an octal escape");
        return CodepointSet::of(0);
      case 'x':
        return CodepointSet::of(hex_digits(2));
      case 'c':
        if (i_ < cps_.size() && ((cps_[i_] | 0x20) >= 'a' && (cps_[i_] | 0x20) <= 'z'))
          return CodepointSet::of(cps_[i_++] % 32);
        syntax("a bad \\c escape");
      case 'u': {
        if (peek('{')) {
          ++i_;
          uint32_t v = 0;
          int n = 0;
          while (i_ < cps_.size() && !peek('}') && n < 7) v = v * 16 + hex_digits(1), ++n;
          if (!peek('}') || n == 0 || v > kMaxCodePoint) syntax("a bad \\u{...} escape");
          ++i_;
          return CodepointSet::of(v);
        }
        uint32_t v = hex_digits(4);
        if (v >= 0xD800 && v <= 0xDBFF && peek('\\') && peek_at(1, 'u')) {
          const size_t save = i_;
          i_ += 2;
          const uint32_t low = hex_digits(4);
          if (low >= 0xDC00 && low <= 0xDFFF)
            return CodepointSet::of(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
          i_ = save;
        }
        if (v >= 0xD800 && v <= 0xDFFF) fail("a lone surrogate \\u" + std::to_string(v));
        return CodepointSet::of(v);
      }
      case 'b':
        if (in_class) return CodepointSet::of(8);
        fail("the word boundary \\b");
      case 'B':
        fail("the word boundary \\B");
      case 'k':
        fail("the backreference \\k<...>");
      case 'p':
      case 'P':
        fail("the Unicode property escape \\" + std::string(1, c));
      default:
        break;
    }
    if (c >= '1' && c <= '9') fail("the backreference \\" + std::string(1, c));
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail("the escape \\" + std::string(1, c));
    return CodepointSet::of(c);  // \. \\ \/ \- \[ and every other punctuation: itself
  }

  CodepointSet parse_class() {
    bool negate = false;
    if (peek('^')) negate = true, ++i_;
    CodepointSet set;
    while (true) {
      if (i_ >= cps_.size()) syntax("a missing ']'");
      if (peek(']')) break;  // [] matches nothing, [^] anything (ECMAScript)
      bool single = true;
      uint32_t lo = 0;
      if (peek('\\')) {
        ++i_;
        CodepointSet e = parse_escape(true);
        if (e.count() == 1)
          lo = e.intervals()[0].first;
        else
          set.add(e), single = false;
      } else {
        lo = cps_[i_++];
      }
      if (!single) continue;
      if (peek('-') && i_ + 1 < cps_.size() && cps_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi;
        if (peek('\\')) {
          ++i_;
          CodepointSet e = parse_escape(true);
          if (e.count() != 1) syntax("a class range ending in a class escape");
          hi = e.intervals()[0].first;
        } else {
          hi = cps_[i_++];
        }
        if (hi < lo) syntax("a class range out of order");
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    ++i_;  // ']'
    return negate ? set.complement() : set.intersect(CodepointSet::all());
  }

  std::string where_;
  std::vector<uint32_t> cps_;
  size_t i_ = 0;
  int nesting_ = 0;
};

long weight(const Node& n) {
  switch (n.kind) {
    case Node::kChars:
      return 1;
    case Node::kRepeat: {
      const long k = weight(n.kids[0]);  // at most kMaxWeight + 1: no overflow below
      return std::min(k * std::max(1, n.max == -1 ? n.min + 1 : n.max), kMaxWeight + 1);
    }
    default: {
      long w = 1;
      for (const auto& k : n.kids) w = std::min(w + weight(k), kMaxWeight + 1);
      return w;
    }
  }
}

class Writer {
 public:
  Writer(GbnfRules& r, RegexTarget target) : r_(r), target_(target) {}

  // An expression that can take a quantifier suffix as it is.
  // e (n's expression, written once: nested repeats would otherwise write it 2^depth times) in
  // parentheses unless it is one character or one class.
  std::string wrap(const Node& n, std::string e) {
    if (n.kind == Node::kChars &&
        (plain(n.chars) ||
         (!e.empty() && e[0] == '[' && e.back() == ']' && e.find(" | ") == std::string::npos)))
      return e;
    return "(" + e + ")";
  }

  std::string expr(const Node& n) {
    switch (n.kind) {
      case Node::kChars:
        return chars(n.chars);
      case Node::kSeq:
        return seq(n);
      case Node::kAlt: {
        std::string out;
        bool empty_branch = false;
        for (const auto& k : n.kids) {
          std::string e = expr(k);
          if (e.empty()) {
            empty_branch = true;
            continue;
          }
          out += (out.empty() ? "" : " | ") + e;
        }
        if (out.empty()) return {};
        return empty_branch ? "(" + out + ")?" : out;
      }
      case Node::kRepeat: {
        const Node& k = n.kids[0];
        std::string e = expr(k);
        if (e.empty()) return {};
        const std::string a = wrap(k, std::move(e));
        if (n.min == 0 && n.max == -1) return a + "*";
        if (n.min == 1 && n.max == -1) return a + "+";
        if (n.min == 0 && n.max == 1) return a + "?";
        if (n.max == -1) return a + "{" + std::to_string(n.min) + ",}";
        if (n.min == n.max) return a + "{" + std::to_string(n.min) + "}";
        return a + "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
      }
    }
    return {};
  }

 private:
  // Whether a character is written as itself (and may join a literal run).
  bool plain(const CodepointSet& s) const {
    if (s.count() != 1) return false;
    const uint32_t cp = s.intervals()[0].first;
    return target_ == RegexTarget::whole_text || (cp >= 0x20 && cp != '"' && cp != '\\');
  }

  std::string chars(const CodepointSet& s) {
    if (s.empty()) return "[^\\x00-\\U0010FFFF]";  // matches nothing: an empty class
    if (plain(s)) return gbnf_literal(tok::encode_utf8(s.intervals()[0].first));
    if (target_ == RegexTarget::json_string) return json_string_chars(r_, s);
    return gbnf_class(s);
  }

  // Runs of single characters are written as one literal.
  std::string seq(const Node& n) {
    std::string out, run;
    const auto flush = [&] {
      if (run.empty()) return;
      out += (out.empty() ? "" : " ") + gbnf_literal(run);
      run.clear();
    };
    for (const auto& k : n.kids) {
      if (k.kind == Node::kChars && plain(k.chars)) {
        run += tok::encode_utf8(k.chars.intervals()[0].first);
        continue;
      }
      flush();
      std::string e = expr(k);
      if (e.empty()) continue;
      if (k.kind == Node::kAlt) e = "(" + e + ")";
      out += (out.empty() ? "" : " ") + e;
    }
    flush();
    return out;
  }

  GbnfRules& r_;
  RegexTarget target_;
};

}  // namespace

std::string regex_gbnf(GbnfRules& r, std::string_view pattern, RegexTarget target,
                       const std::string& where) {
  RegexParser parser(pattern, where);
  auto branches = parser.parse_top();
  Writer w(r, target);
  long total = 0;
  std::string out;
  bool empty_branch = false;
  for (const auto& b : branches) {
    total += weight(b.node);
    if (total > kMaxWeight)
      throw GrammarError(where + ": the pattern expands to more than " +
                         std::to_string(kMaxWeight) + " characters of grammar; use smaller counts");
    std::string e = w.expr(b.node);
    if (target == RegexTarget::json_string) {
      const std::string any = json_char(r) + "*";
      if (!b.start_anchored) e = any + (e.empty() ? "" : " " + e);
      if (!b.end_anchored && !(e == any)) e = (e.empty() ? "" : e + " ") + any;
    }
    if (e.empty()) {
      empty_branch = true;
      continue;
    }
    if (b.node.kind == Node::kAlt) e = "(" + e + ")";
    out += (out.empty() ? "" : " | ") + e;
  }
  r.charge(out.size());
  if (out.empty()) return "\"\"";
  return empty_branch ? "(" + out + ")?" : "(" + out + ")";
}

std::string gbnf_from_regex(std::string_view pattern) {
  GbnfRules r("regex");
  const std::string body = regex_gbnf(r, pattern, RegexTarget::whole_text, "regex");
  return r.text(body);
}

}  // namespace sandwich::engine::grammar
