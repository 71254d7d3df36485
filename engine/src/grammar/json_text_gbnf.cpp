#include "grammar/json_text_gbnf.h"

#include <map>
#include <memory>

#include "engine/grammar/grammar.h"
#include "text/tokenizer_common.h"

namespace sandwich::engine::grammar {

namespace {

// Code points a JSON string may hold raw.
const CodepointSet& raw_string_chars() {
  static const CodepointSet s = [] {
    CodepointSet forbidden = CodepointSet::range(0, 0x1F);
    forbidden.add('"', '"');
    forbidden.add('\\', '\\');
    return forbidden.complement();
  }();
  return s;
}

// A hex digit's value, in both cases.
CodepointSet hex_digit_chars(int d) {
  if (d < 10) return CodepointSet::of('0' + d);
  CodepointSet s = CodepointSet::of('a' + d - 10);
  s.add('A' + d - 10, 'A' + d - 10);
  return s;
}

// `digits` hex digits (either case) spelling a number of `allowed` (values below 16^digits),
// with `prefix` the value of the digits before them.
std::string hex_in(GbnfRules& r, const CodepointSet& allowed, uint32_t prefix, int digits) {
  const uint32_t span = 1u << (4 * digits);
  const uint32_t lo = prefix * span, hi = lo + span - 1;
  const CodepointSet here = allowed.intersect(CodepointSet::range(lo, hi));
  if (here.empty()) return {};
  if (here.count() == span) {
    const std::string hex = r.fixed("hex", "[0-9a-fA-F]");
    return digits == 1 ? hex : hex + "{" + std::to_string(digits) + "}";
  }
  // Group the next digit's values by what may follow them.
  std::map<std::string, CodepointSet> by_rest;
  std::vector<std::string> order;
  for (int d = 0; d < 16; ++d) {
    std::string rest = digits == 1 ? (here.contains(lo + d) ? std::string(" ") : std::string())
                                   : hex_in(r, allowed, prefix * 16 + d, digits - 1);
    if (rest.empty()) continue;
    if (!by_rest.count(rest)) order.push_back(rest);
    by_rest[rest].add(hex_digit_chars(d));
  }
  std::string out;
  for (const auto& rest : order) {
    if (!out.empty()) out += " | ";
    out += gbnf_class(by_rest[rest]);
    if (rest != " ") out += " " + rest;
  }
  return order.size() == 1 ? out : "(" + out + ")";
}

const CodepointSet& bmp_non_surrogates() {
  static const CodepointSet s = [] {
    CodepointSet b = CodepointSet::range(0, 0xD7FF);
    b.add(0xE000, 0xFFFF);
    return b;
  }();
  return s;
}

// \u escapes after the "\u": one non-surrogate of `bmp`, or (when `pairs`) a surrogate pair.
std::string unicode_escape(GbnfRules& r, const CodepointSet& bmp, bool pairs) {
  std::string out = hex_in(r, bmp, 0, 4);
  if (pairs) {
    const std::string high = hex_in(r, CodepointSet::range(0xD800, 0xDBFF), 0, 4);
    const std::string low = hex_in(r, CodepointSet::range(0xDC00, 0xDFFF), 0, 4);
    out = "(" + (out.empty() ? "" : out + " | ") + high + " \"\\\\u\" " + low + ")";
  }
  return out;
}

// The short escapes and the character each one stands for.
const std::vector<std::pair<char, uint32_t>>& short_escapes() {
  static const std::vector<std::pair<char, uint32_t>> e = {
      {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 8}, {'f', 12}, {'n', 10}, {'r', 13}, {'t', 9}};
  return e;
}

// The canonical escape (dump()'s) of a character that may not appear raw.
std::string canonical_escape(uint32_t cp) {
  for (const auto& [c, v] : short_escapes())
    if (v == cp && c != '/') return gbnf_literal(std::string("\\") + c);
  static const char* digits = "0123456789abcdef";
  std::string out = gbnf_literal(std::string("\\u00") + digits[cp >> 4]);
  const int low = cp & 15;
  return out + " " +
         (low < 10 ? gbnf_literal(std::string(1, digits[low])) : gbnf_class(hex_digit_chars(low)));
}

}  // namespace

std::string json_space(GbnfRules& r) {
  return r.fixed("space", "( \" \" | \"\\n\" [ \\x09]{0,20} )?");
}

std::string json_char(GbnfRules& r) {
  const std::string unicode = r.fixed("unicode", unicode_escape(r, bmp_non_surrogates(), true));
  const std::string escape = r.fixed("escape", "[\\x22\\x5C/bfnrt] | \"u\" " + unicode);
  return r.fixed("char", gbnf_class(raw_string_chars()) + " | \"\\\\\" " + escape);
}

std::string json_string(GbnfRules& r) {
  const std::string ch = json_char(r), sp = json_space(r);
  return r.fixed("string", "\"\\\"\" " + ch + "* \"\\\"\" " + sp);
}

// Digits are bounded: 18 fit an int64 and a double's precision, and a two-digit exponent stays
// finite (1e400 is an error to many JSON parsers), so what a random model writes parses anywhere.
std::string json_unsigned_number_body() {
  return "(\"0\" | [1-9] [0-9]{0,17}) (\".\" [0-9]{1,17})? ([eE] [-+]? [0-9]{1,2})?";
}

std::string json_number(GbnfRules& r) {
  return r.fixed("number", "\"-\"? " + json_unsigned_number_body() + " " + json_space(r));
}

std::string json_integer(GbnfRules& r) {
  return r.fixed("integer", "\"-\"? (\"0\" | [1-9] [0-9]{0,17}) " + json_space(r));
}

std::string json_boolean(GbnfRules& r) {
  return r.fixed("boolean", "(\"true\" | \"false\") " + json_space(r));
}

std::string json_null(GbnfRules& r) {
  return r.fixed("null", "\"null\" " + json_space(r));
}

std::string json_value(GbnfRules& r) {
  if (r.has("value")) return "value";
  // object and array refer back to value: name it first.
  const std::string sp = json_space(r), str = json_string(r);
  r.fixed("value", "object | array | string | number | boolean | null");
  r.fixed("object", "\"{\" " + sp + " (" + str + " \":\" " + sp + " value (\",\" " + sp + " " +
                        str + " \":\" " + sp + " value)*)? \"}\" " + sp);
  r.fixed("array", "\"[\" " + sp + " (value (\",\" " + sp + " value)*)? \"]\" " + sp);
  json_number(r);
  json_integer(r);
  json_boolean(r);
  json_null(r);
  return "value";
}

std::string json_object(GbnfRules& r) {
  json_value(r);
  return "object";
}

std::string json_array(GbnfRules& r) {
  json_value(r);
  return "array";
}

std::string json_string_chars(GbnfRules& r, const CodepointSet& set) {
  std::string out;
  const CodepointSet raw = set.intersect(raw_string_chars());
  if (!raw.empty()) out = gbnf_class(raw);
  const CodepointSet escaped = set.minus(raw_string_chars());
  for (const auto& [a, b] : escaped.intervals())
    for (uint32_t cp = a; cp <= b; ++cp) out += (out.empty() ? "" : " | ") + canonical_escape(cp);
  // A class with escapes (`.`, \s, [^a]) is long: one rule, shared by every use.
  return escaped.empty() ? out : r.add("string-chars", out);
}

namespace {

struct KeyTrie {
  bool terminal = false;
  std::map<uint32_t, std::unique_ptr<KeyTrie>> next;
};

// Every spelling of one character inside a string.
std::string spellings(GbnfRules& r, uint32_t cp) {
  std::vector<std::string> alts;
  if (raw_string_chars().contains(cp)) alts.push_back(gbnf_literal(tok::encode_utf8(cp)));
  for (const auto& [c, v] : short_escapes())
    if (v == cp) alts.push_back(gbnf_literal(std::string("\\") + c));
  if (cp <= 0xFFFF) {
    alts.push_back("\"\\\\u\" " + hex_in(r, CodepointSet::of(cp), 0, 4));
  } else {
    const uint32_t v = cp - 0x10000;
    alts.push_back("\"\\\\u\" " + hex_in(r, CodepointSet::of(0xD800 + (v >> 10)), 0, 4) +
                   " \"\\\\u\" " + hex_in(r, CodepointSet::of(0xDC00 + (v & 0x3FF)), 0, 4));
  }
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return "(" + out + ")";
}

// The rest of a string (closing quote included) after the prefix that led to `node`, such that
// the whole value is not one of the words in the trie.
std::string key_rest(GbnfRules& r, const KeyTrie& node) {
  const std::string ch = json_char(r);
  std::vector<std::string> alts;
  if (!node.terminal) alts.push_back("\"\\\"\"");
  // A first character that leaves the trie, then anything.
  CodepointSet children;
  bool astral_child = false;
  for (const auto& [cp, _] : node.next) {
    children.add(cp, cp);
    astral_child |= cp > 0xFFFF;
  }
  std::string other = gbnf_class(raw_string_chars().minus(children));
  std::string shorts;
  for (const auto& [c, v] : short_escapes())
    if (!children.contains(v))
      shorts += c == '"' ? "\\x22" : c == '\\' ? "\\x5C" : std::string(1, c);
  std::string esc =
      "\"u\" " + unicode_escape(r, bmp_non_surrogates().minus(children), !astral_child);
  if (!shorts.empty()) esc = "[" + shorts + "] | " + esc;
  other += " | \"\\\\\" (" + esc + ")";
  alts.push_back("(" + other + ") " + ch + "* \"\\\"\"");
  for (const auto& [cp, child] : node.next)
    alts.push_back(spellings(r, cp) + " " + key_rest(r, *child));
  std::string body;
  for (const auto& a : alts) body += (body.empty() ? "" : " | ") + a;
  return r.add("key-rest", body);
}

}  // namespace

std::string json_string_except(GbnfRules& r, const std::vector<std::string>& excluded) {
  if (excluded.empty()) return json_string(r);
  KeyTrie root;
  for (const auto& word : excluded) {
    KeyTrie* node = &root;
    for (size_t pos = 0; pos < word.size();) {
      const uint32_t cp = next_code_point(word, pos, "JSON Schema property name");
      auto& next = node->next[cp];
      if (!next) next = std::make_unique<KeyTrie>();
      node = next.get();
    }
    node->terminal = true;
  }
  return r.add("other-key", "\"\\\"\" " + key_rest(r, root) + " " + json_space(r));
}

std::string json_literal(GbnfRules& r, const nlohmann::json& v, int depth) {
  if (depth > 128) throw GrammarError("JSON Schema: an enum or const value nested over 128 deep");
  const std::string sp = json_space(r);
  if (v.is_object()) {
    std::string out = "\"{\" " + sp;
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += " \",\" " + sp;
      first = false;
      out += " " + gbnf_literal(nlohmann::json(k).dump()) + " " + sp + " \":\" " + sp + " " +
             json_literal(r, x, depth + 1);
    }
    return out + " \"}\" " + sp;
  }
  if (v.is_array()) {
    std::string out = "\"[\" " + sp;
    bool first = true;
    for (const auto& x : v) {
      if (!first) out += " \",\" " + sp;
      first = false;
      out += " " + json_literal(r, x, depth + 1);
    }
    return out + " \"]\" " + sp;
  }
  return gbnf_literal(v.dump()) + " " + sp;
}

}  // namespace sandwich::engine::grammar
