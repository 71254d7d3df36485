#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/grammar_checks.h"
#include "grammar/utf8_ranges.h"

namespace sandwich::engine::grammar {
namespace {

using Sequence = std::vector<Element>;

struct RuleDraft {
  std::string name;
  std::vector<Sequence> alternatives;
  int line = 0;            // where defined (0: not yet)
  int first_use_line = 0;  // where first referenced, for "undefined rule"
  bool defined = false;
  bool repetition_loop = false;
};

// Rule names: letters, digits, dashes and (as llama.cpp's grammar guide allows) underscores.
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : src_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(i + 1);
  }

  Grammar::Impl parse(std::string_view root) {
    skip_space(true);
    while (pos_ < src_.size()) parse_rule();
    if (rules_.empty() ||
        std::none_of(rules_.begin(), rules_.end(), [](const RuleDraft& r) { return r.defined; }))
      throw GrammarError("GBNF: empty grammar (no rules)");
    for (const auto& r : rules_)
      if (!r.defined)
        throw GrammarError("GBNF line " + std::to_string(r.first_use_line) + ": undefined rule '" +
                           r.name + "'");
    auto it = by_name_.find(std::string(root));
    if (it == by_name_.end())
      throw GrammarError("GBNF: no rule '" + std::string(root) + "' (the start rule)");
    return flatten(it->second);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    throw GrammarError("GBNF line " + std::to_string(line_at(at)) + ": " + what);
  }
  // Binary search in the line starts: a grammar of many rules is not counted through again for
  // each of them.
  int line_at(size_t at) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), at) -
                            line_starts_.begin());
  }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= src_.size(); }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && src_[pos_] != '\r' && src_[pos_] != '\n') ++pos_;
      } else if (newline_ok && (c == '\r' || c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    size_t start = pos_;
    while (!at_end() && is_word_char(src_[pos_])) ++pos_;
    if (pos_ == start) fail("expecting a rule name");
    return std::string(src_.substr(start, pos_ - start));
  }

  int rule_id(const std::string& name) {
    auto [it, fresh] = by_name_.try_emplace(name, static_cast<int>(rules_.size()));
    if (fresh) {
      rules_.push_back({});
      rules_.back().name = name;
    }
    return it->second;
  }

  int new_rule() {
    rules_.push_back({});
    rules_.back().name = rules_[current_rule_].name;
    rules_.back().line = rules_[current_rule_].line;
    rules_.back().defined = true;
    return static_cast<int>(rules_.size()) - 1;
  }

  void count_elements(size_t n) {
    elements_ += n;
    if (elements_ > kMaxElements)
      fail("the grammar is too large (more than " + std::to_string(kMaxElements) +
           " elements once repetitions are expanded)");
  }
  void push(Sequence& seq, Element e) {
    count_elements(1);
    seq.push_back(e);
  }

  int32_t terminal(const ByteSet& set) {
    auto [it, fresh] =
        terminal_ids_.try_emplace(set.words(), static_cast<int32_t>(terminals_.size()));
    if (fresh) terminals_.push_back(set);
    return it->second;
  }
  Element byte_element(uint8_t b) {
    ByteSet s;
    s.add(b);
    return {Element::Kind::Terminal, terminal(s)};
  }

  void parse_rule() {
    size_t name_at = pos_;
    std::string name = parse_name();
    int id = rule_id(name);
    if (rules_[id].defined) fail_at(name_at, "rule '" + name + "' is defined twice");
    rules_[id].defined = true;
    rules_[id].line = line_at(name_at);
    current_rule_ = id;
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") fail("expecting '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    rules_[id].alternatives = parse_alternatives(false, 0);
    if (peek() == '\r')
      pos_ += peek(1) == '\n' ? 2 : 1;
    else if (peek() == '\n')
      ++pos_;
    else if (!at_end())
      fail(std::string("unexpected '") + peek() + "' (expecting newline or end)");
    skip_space(true);
  }

  std::vector<Sequence> parse_alternatives(bool nested, int depth) {
    if (depth > kMaxGroupNesting)
      fail("groups nested deeper than " + std::to_string(kMaxGroupNesting));
    std::vector<Sequence> alts;
    alts.push_back(parse_sequence(nested, depth));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested, depth));
    }
    return alts;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      char c = peek();
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) fail("expecting " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodePoint) fail("code point above U+10FFFF");
    return v;
  }

  // One character of a literal or class: an escape or a UTF-8 encoded code point.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of input");
    unsigned char c = static_cast<unsigned char>(src_[pos_]);
    if (c == '\\') {
      ++pos_;
      char e = peek();
      ++pos_;
      switch (e) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case 'n':
          return '\n';
        case '\\':
          return '\\';
        case '"':
          return '"';
        case '[':
          return '[';
        case ']':
          return ']';
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + (e ? e : ' ') + "'");
      }
    }
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || pos_ + len > src_.size()) fail("invalid UTF-8 in the grammar text");
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int i = 1; i < len; ++i) {
      unsigned char d = static_cast<unsigned char>(src_[pos_ + i]);
      if ((d & 0xC0) != 0x80) fail("invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (d & 0x3F);
    }
    pos_ += len;
    return cp;
  }

  // A character class as one element: a byte-set terminal when every character is one byte,
  // else a rule whose alternatives are the UTF-8 byte-range sequences.
  Element class_element(const std::vector<std::pair<uint32_t, uint32_t>>& code_ranges) {
    std::vector<ByteRangeSequence> seqs;
    for (auto [lo, hi] : code_ranges) utf8_sequences(lo, hi, seqs);
    ByteSet single;
    bool has_single = false;
    std::vector<Sequence> alts;
    for (const auto& seq : seqs) {
      if (seq.size() == 1) {
        single.add_range(seq[0].lo, seq[0].hi);
        has_single = true;
        continue;
      }
      Sequence alt;
      for (auto r : seq) {
        ByteSet s;
        s.add_range(r.lo, r.hi);
        push(alt, {Element::Kind::Terminal, terminal(s)});
      }
      alts.push_back(std::move(alt));
    }
    if (alts.empty() && has_single) return {Element::Kind::Terminal, terminal(single)};
    if (has_single) {
      Sequence alt;
      push(alt, {Element::Kind::Terminal, terminal(single)});
      alts.insert(alts.begin(), std::move(alt));
    }
    int r = new_rule();
    rules_[r].alternatives = std::move(alts);
    return {Element::Kind::RuleRef, r};
  }

  Element parse_class() {
    const size_t start = pos_++;  // '['
    bool negate = false;
    if (peek() == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (peek() != ']') {
      if (at_end()) fail_at(start, "unterminated character class");
      size_t at = pos_;
      uint32_t lo = parse_char(), hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < src_.size()) {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail_at(at, "character range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;  // ']'
    return class_element(normalize_ranges(std::move(ranges), negate));
  }

  int parse_count() {
    size_t start = pos_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepetition) fail("repetition count above " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail("expecting a number in '{m,n}'");
    return static_cast<int>(v);
  }

  // R ::= x R | ""  (x*): right recursion in tail position, so the stacks do not grow.
  Element loop_of(Element x) {
    int r = new_rule();
    count_elements(2);
    rules_[r].alternatives = {Sequence{x, {Element::Kind::RuleRef, r}}, Sequence{}};
    rules_[r].repetition_loop = true;
    return {Element::Kind::RuleRef, r};
  }
  // R ::= x tail | ""  (x? or, nested, the optional copies of x{m,n}).
  Element optional_of(Element x, const Element* tail) {
    int r = new_rule();
    Sequence first{x};
    if (tail) first.push_back(*tail);
    count_elements(first.size());
    rules_[r].alternatives = {std::move(first), Sequence{}};
    return {Element::Kind::RuleRef, r};
  }

  void apply_repetition(Sequence& seq, size_t item_start, int min, int max /* -1: no bound */) {
    if (item_start >= seq.size()) fail("expecting an item before a repetition operator");
    Element x;
    if (seq.size() - item_start == 1) {
      x = seq[item_start];
    } else {
      int r = new_rule();
      rules_[r].alternatives = {Sequence(seq.begin() + item_start, seq.end())};
      x = {Element::Kind::RuleRef, r};
    }
    seq.resize(item_start);
    for (int i = 0; i < min; ++i) push(seq, x);
    if (max < 0) {
      push(seq, loop_of(x));
    } else if (max > min) {
      Element chain = optional_of(x, nullptr);
      for (int i = min + 1; i < max; ++i) chain = optional_of(x, &chain);
      push(seq, chain);
    }
  }

  Sequence parse_sequence(bool nested, int depth) {
    Sequence seq;
    size_t last_start = seq.size();
    bool have_item = false;
    while (!at_end()) {
      char c = peek();
      size_t at = pos_;
      if (c == '"') {
        ++pos_;
        last_start = seq.size();
        std::vector<uint8_t> bytes;
        while (peek() != '"') {
          if (at_end()) fail_at(at, "unterminated string literal");
          bytes.clear();
          append_utf8(parse_char(), bytes);
          for (uint8_t b : bytes) push(seq, byte_element(b));
        }
        ++pos_;
        have_item = true;
      } else if (c == '[') {
        last_start = seq.size();
        push(seq, parse_class());
        have_item = true;
      } else if (is_word_char(c)) {
        last_start = seq.size();
        std::string name = parse_name();
        int id = rule_id(name);
        if (!rules_[id].first_use_line) rules_[id].first_use_line = line_at(at);
        push(seq, {Element::Kind::RuleRef, id});
        have_item = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        int r = new_rule();
        auto alts = parse_alternatives(true, depth + 1);
        rules_[r].alternatives = std::move(alts);
        if (peek() != ')') fail_at(at, "unclosed '('");
        ++pos_;
        last_start = seq.size();
        push(seq, {Element::Kind::RuleRef, r});
        have_item = true;
      } else if (c == '.') {
        ++pos_;
        last_start = seq.size();
        if (any_char_rule_ < 0) {
          Element e = class_element(normalize_ranges({}, true));
          any_char_rule_ = e.value;
        }
        push(seq, {Element::Kind::RuleRef, any_char_rule_});
        have_item = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) fail(std::string("expecting an item before '") + c + "'");
        ++pos_;
        if (c == '*') {
          apply_repetition(seq, last_start, 0, -1);
        } else if (c == '+') {
          apply_repetition(seq, last_start, 1, -1);
        } else if (c == '?') {
          apply_repetition(seq, last_start, 0, 1);
        } else {
          skip_space(nested);
          int min = parse_count(), max = min;
          skip_space(nested);
          if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            max = peek() == '}' ? -1 : parse_count();
            skip_space(nested);
          }
          if (peek() != '}') fail_at(at, "expecting '}' to close '{m,n}'");
          ++pos_;
          if (max >= 0 && max < min) fail_at(at, "repetition {m,n} with n < m");
          apply_repetition(seq, last_start, min, max);
        }
        // "x*?" repeats the repeated item again, as in llama.cpp.
      } else if (c == '<' || (c == '!' && peek(1) == '<')) {
        fail("token references (<...>) are not supported; write the token's text instead");
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  Grammar::Impl flatten(int root) {
    Grammar::Impl g;
    g.terminals = std::move(terminals_);
    g.root = root;
    for (auto& r : rules_) {
      std::vector<int32_t> starts;
      for (auto& alt : r.alternatives) {
        starts.push_back(static_cast<int32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back({Element::Kind::End, 0});
      }
      g.alternatives.push_back(std::move(starts));
      g.names.push_back(std::move(r.name));
      g.lines.push_back(r.line);
      g.repetition_loop.push_back(r.repetition_loop);
    }
    check_left_recursion(g);
    return g;
  }

  std::string_view src_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  std::vector<RuleDraft> rules_;
  std::unordered_map<std::string, int> by_name_;
  std::vector<ByteSet> terminals_;
  std::map<std::array<uint64_t, 4>, int32_t> terminal_ids_;
  size_t elements_ = 0;
  int current_rule_ = 0;
  int any_char_rule_ = -1;
};

}  // namespace

Grammar::Impl parse_gbnf(std::string_view text, std::string_view root) {
  return GbnfParser(text).parse(root);
}

}  // namespace sandwich::engine::grammar
