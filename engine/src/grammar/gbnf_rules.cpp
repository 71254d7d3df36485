#include "grammar/gbnf_rules.h"

#include <cstdio>
#include <set>

#include "engine/grammar/grammar.h"

namespace sandwich::engine::grammar {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// One code point inside [...] or "...": hex escapes for everything but plain letters, digits and
// punctuation that has no meaning there, so that no reader can take it for syntax.
std::string escape_code_point(uint32_t cp, bool in_class) {
  const bool plain = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
                     (cp >= '0' && cp <= '9') ||
                     (cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' &&
                      (!in_class || (cp != ']' && cp != '[' && cp != '-' && cp != '^')));
  if (plain) return std::string(1, static_cast<char>(cp));
  char buf[16];
  if (cp < 0x80)
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
  else if (cp <= 0xFFFF)
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
  else
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

// The names fixed() may give (the JSON primitives); never given to any other rule.
const std::set<std::string>& fixed_names() {
  static const std::set<std::string> names = {
      "space",  "value",   "object",  "array",       "string",      "char",
      "number", "integer", "boolean", "null",        "hex",         "hex4",
      "escape", "unicode", "members", "json-string", "json-number", "digits"};
  return names;
}

}  // namespace

std::string GbnfRules::unique_name(std::string_view hint) {
  std::string base;
  for (char c : hint) base += is_name_char(c) ? c : '-';
  if (base.empty()) base = "r";
  if (base.size() > 48) base.resize(48);
  int& n = used_names_[base];
  std::string name = n == 0 ? base : base + "-" + std::to_string(n);
  ++n;
  while (bodies_.count(name) || name == "root" || fixed_names().count(name))
    name = base + "-" + std::to_string(n++);
  return name;
}

void GbnfRules::charge(size_t bytes) {
  bytes_ += bytes;
  if (bytes_ > max_bytes_)
    throw GrammarError(what_ + ": the grammar would pass " + std::to_string(max_bytes_ >> 20) +
                       " MiB; simplify it (fewer alternatives, smaller counts)");
}

std::string GbnfRules::add(std::string_view name_hint, const std::string& body) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  std::string name = unique_name(name_hint);
  define(name, body);
  return name;
}

std::string GbnfRules::reserve(std::string_view name_hint) {
  std::string name = unique_name(name_hint);
  bodies_[name];  // taken, body to come
  order_.push_back(name);
  return name;
}

void GbnfRules::define(const std::string& name, const std::string& body) {
  charge(name.size() + body.size() + 6);
  auto [it, fresh] = bodies_.try_emplace(name, body);
  if (fresh)
    order_.push_back(name);
  else
    it->second = body;
  by_body_.try_emplace(body, name);
}

std::string GbnfRules::fixed(const std::string& name, const std::string& body) {
  if (!fixed_names().count(name))
    throw GrammarError(what_ + ": internal error: '" + name + "' is not a fixed rule name");
  if (!bodies_.count(name)) define(name, body);
  return name;
}

std::string GbnfRules::text(const std::string& root_body) const {
  std::string out = "root ::= " + root_body + "\n";
  for (const auto& name : order_) out += name + " ::= " + bodies_.at(name) + "\n";
  return out;
}

std::string gbnf_literal(std::string_view utf8) {
  std::string out = "\"";
  for (unsigned char c : utf8) {
    if (c >= 0x80)
      out += static_cast<char>(c);  // raw UTF-8, read back as the same bytes
    else
      out += escape_code_point(c, false);
  }
  return out + "\"";
}

std::string gbnf_class(const CodepointSet& set) {
  // Written negated when that is shorter ([^"\\] rather than a dozen ranges).
  const CodepointSet neg = set.complement();
  const bool negate = neg.intervals().size() < set.intervals().size();
  std::string out = negate ? "[^" : "[";
  for (const auto& [a, b] : (negate ? neg : set).intervals()) {
    out += escape_code_point(a, true);
    if (b == a + 1)
      out += escape_code_point(b, true);
    else if (b > a)
      out += "-" + escape_code_point(b, true);
  }
  return out + "]";
}

}  // namespace sandwich::engine::grammar
