// JSON Schema to GBNF: the subset of JSON Schema users write for structured output, compiled
// rule by rule; what would change which values are valid and is not compiled is refused by name.
#include "grammar/json_schema_to_gbnf.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "engine/grammar/grammar.h"
#include "grammar/gbnf_rules.h"
#include "grammar/integer_range_gbnf.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_text_gbnf.h"
#include "grammar/regex_to_gbnf.h"

namespace sandwich::engine::grammar {

using nlohmann::json;

namespace {

// Counts (minItems, maxLength...) above this are not expanded: a larger maximum is read as
// unbounded, a larger minimum is refused.
constexpr int64_t kMaxCount = 1000;
constexpr int kMaxDepth = 64;
constexpr int kMaxSteps = 100000;  // schemas visited and merged, for DAGs that fan out

// A schema no value satisfies (a false schema, an empty enum, types that exclude each other):
// anyOf drops such a branch, an optional property is left out; anywhere else it is an error.
struct Unsatisfiable : GrammarError {
  using GrammarError::GrammarError;
};

const std::vector<std::string> kTypes = {"null",   "boolean", "object", "array",
                                         "string", "number",  "integer"};

const std::set<std::string>& object_keywords() {
  static const std::set<std::string> k = {"properties", "required", "additionalProperties"};
  return k;
}
const std::set<std::string>& array_keywords() {
  static const std::set<std::string> k = {"items", "prefixItems", "additionalItems", "minItems",
                                          "maxItems"};
  return k;
}
const std::set<std::string>& string_keywords() {
  static const std::set<std::string> k = {"minLength", "maxLength", "pattern", "format"};
  return k;
}
const std::set<std::string>& number_keywords() {
  static const std::set<std::string> k = {"minimum", "maximum", "exclusiveMinimum",
                                          "exclusiveMaximum"};
  return k;
}

bool is_unsupported(const std::string& k, const json& v) {
  static const std::set<std::string> always = {
      "patternProperties", "not",           "dependentRequired", "dependentSchemas",
      "dependencies",      "contains",      "minContains",       "maxContains",
      "multipleOf",        "maxProperties", "propertyNames",     "unevaluatedProperties",
      "unevaluatedItems",  "$dynamicRef",   "$recursiveRef",     "if"};
  if (always.count(k)) return true;
  if (k == "uniqueItems") return !(v.is_boolean() && !v.get<bool>());
  if (k == "minProperties") return !(v.is_number() && v.get<double>() <= 0);
  return false;
}

// Keywords that constrain a value (anything but annotations, definitions and the given ones).
bool has_constraints(const json& s, std::initializer_list<const char*> except) {
  for (const auto& [k, _] : s.items()) {
    if (is_annotation(k)) continue;
    if (std::find_if(except.begin(), except.end(), [&](const char* e) { return k == e; }) !=
        except.end())
      continue;
    return true;
  }
  return false;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string type_of_value(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>()) return "integer";
  return "number";
}

// Anchored regexes for the formats users ask for; other formats are plain strings.
const std::map<std::string, std::string>& format_patterns() {
  static const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
  static const std::string time =
      R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))";
  static const std::string octet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  static const std::map<std::string, std::string> f = {
      {"date", "^" + date + "$"},
      {"time", "^" + time + "$"},
      {"date-time", "^" + date + "[Tt]" + time + "$"},
      {"uuid", R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)"},
      {"email", R"(^[A-Za-z0-9_%+-]+(\.[A-Za-z0-9_%+-]+)*@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$)"},
      {"ipv4", "^(" + octet + "\\.){3}" + octet + "$"},
  };
  return f;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& opt)
      : root_(root), opt_(opt), r_("JSON Schema") {}

  std::string compile() {
    try {
      const std::string e = visit(root_, "", "root");
      return r_.text(e);
    } catch (const Unsatisfiable& e) {
      throw GrammarError(e.what());
    }
  }

 private:
  std::string where(const std::string& ptr) const {
    return "JSON Schema at " + (ptr.empty() ? std::string("/") : ptr);
  }
  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
    throw GrammarError(where(ptr) + ": " + what);
  }
  [[noreturn]] void nothing(const std::string& ptr, const std::string& why) const {
    throw Unsatisfiable(where(ptr) + ": no value satisfies the schema (" + why + ")");
  }
  void step(const std::string& ptr) {
    if (++steps_ > kMaxSteps)
      fail(ptr, "the schema takes more than " + std::to_string(kMaxSteps) +
                    " steps to compile; simplify it");
  }

  struct DepthGuard {
    SchemaCompiler& c;
    DepthGuard(SchemaCompiler& c, const std::string& ptr) : c(c) {
      if (++c.depth_ > kMaxDepth)
        c.fail(ptr, "nested deeper than " + std::to_string(kMaxDepth) +
                        " levels (or a $ref or allOf that loops)");
    }
    ~DepthGuard() { --c.depth_; }
  };

  // A minItems/maxItems-like pair: {min, max}, max -1 when unbounded or past kMaxCount.
  std::pair<int64_t, int64_t> count_bounds(const json& s, const std::string& ptr,
                                           const char* min_key, const char* max_key) const {
    const auto count = [&](const char* key, int64_t dflt) -> int64_t {
      if (!s.contains(key)) return dflt;
      const json& v = s[key];
      if (!v.is_number() || v.get<double>() < 0)
        fail(ptr, std::string("'") + key + "' must be a non-negative integer");
      const double d = v.get<double>();
      return d > 1e15 ? int64_t{1} << 50 : static_cast<int64_t>(d);
    };
    const int64_t min = count(min_key, 0);
    int64_t max = count(max_key, -1);
    if (max != -1 && max < min) nothing(ptr, std::string(max_key) + " < " + min_key);
    if (min > kMaxCount)
      fail(ptr, std::string(min_key) + " over " + std::to_string(kMaxCount) + " is not supported");
    if (max > kMaxCount) max = -1;
    return {min, max};
  }

  // --- $ref -------------------------------------------------------------------------------

  const json& resolve(const std::string& ref, const std::string& ptr) const {
    if (ref.empty() || ref[0] != '#')
      fail(ptr, "'$ref' \"" + ref + "\": external references are not supported (only \"#...\")");
    if (ref.size() > 1 && ref[1] != '/')
      fail(ptr, "'$ref' \"" + ref + "\": anchors are not supported (use \"#/$defs/...\")");
    const json* at = &root_;
    size_t pos = 1;
    while (pos < ref.size()) {
      const size_t next = ref.find('/', pos + 1);
      std::string raw =
          ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      std::string tok;
      for (size_t i = 0; i < raw.size(); ++i) {  // ~1 ~0 and %XX escapes
        if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
          tok += raw[++i] == '0' ? '~' : '/';
        } else if (raw[i] == '%' && i + 2 < raw.size() && isxdigit(raw[i + 1]) &&
                   isxdigit(raw[i + 2])) {
          tok += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          tok += raw[i];
        }
      }
      if (at->is_object() && at->contains(tok)) {
        at = &(*at)[tok];
      } else if (at->is_array() && !tok.empty() &&
                 tok.find_first_not_of("0123456789") == std::string::npos && tok.size() < 9 &&
                 std::stoul(tok) < at->size()) {
        at = &(*at)[std::stoul(tok)];
      } else {
        fail(ptr, "'$ref' \"" + ref + "\" points to nothing in the schema");
      }
      pos = next == std::string::npos ? ref.size() : next;
    }
    return *at;
  }

  std::string visit_ref(const std::string& ref, const std::string& ptr) {
    if (no_progress_.count(ref))
      fail(ptr, "'$ref' \"" + ref + "\" comes back to itself before any object or array");
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    const json& target = resolve(ref, ptr);
    const size_t slash = ref.rfind('/');
    const std::string name =
        r_.reserve(slash == std::string::npos ? "root-ref" : "ref-" + ref.substr(slash + 1));
    ref_rules_[ref] = name;
    no_progress_.insert(ref);
    try {
      const std::string body = visit(target, ref.substr(1), name);
      r_.define(name, body);
    } catch (const Unsatisfiable&) {
      r_.define(name, "[^\\x00-\\U0010FFFF]");  // nothing: the reference is dropped where it is
      no_progress_.erase(ref);
      throw;
    }
    no_progress_.erase(ref);
    return name;
  }

  // The schema a $ref (chain) stands for, with its siblings applied where the draft says so.
  json inline_refs(json s, const std::string& ptr) {
    for (int hops = 0; s.is_object() && s.contains("$ref"); ++hops) {
      if (hops > kMaxDepth) fail(ptr, "a chain of more than 64 '$ref's (or a loop)");
      if (!s["$ref"].is_string()) fail(ptr, "'$ref' must be a string");
      const json target = resolve(s["$ref"].get<std::string>(), ptr);
      json siblings = s;
      siblings.erase("$ref");
      if (opt_.ref_overrides_siblings || !has_constraints(siblings, {})) {
        s = target;
      } else if (target.is_boolean()) {
        if (!target.get<bool>()) return false;
        s = siblings;
      } else {
        s = merge_objects(target, siblings, ptr);
      }
    }
    return s;
  }

  // --- allOf ------------------------------------------------------------------------------

  // a and b (objects or booleans, possibly with $ref and allOf) as one schema.
  json merge_objects(json a, json b, const std::string& ptr) {
    step(ptr);
    DepthGuard guard(*this, ptr);
    a = flatten(inline_refs(std::move(a), ptr), ptr);
    b = flatten(inline_refs(std::move(b), ptr), ptr);
    if (a.is_boolean()) return a.get<bool>() ? b : json(false);
    if (b.is_boolean()) return b.get<bool>() ? a : json(false);
    if (!a.is_object() || !b.is_object()) fail(ptr, "allOf items must be schemas");
    return merge_schemas(a, b, where(ptr));
  }

  // A schema with its allOf folded in.
  json flatten(json s, const std::string& ptr) {
    if (!s.is_object() || !s.contains("allOf")) return s;
    const json parts = s["allOf"];
    if (!parts.is_array() || parts.empty()) fail(ptr, "'allOf' must be a non-empty array");
    s.erase("allOf");
    for (const auto& p : parts) {
      s = merge_objects(std::move(s), p, ptr + "/allOf");
      if (s.is_boolean() && !s.get<bool>()) return s;
    }
    return s;
  }

  // --- schemas ----------------------------------------------------------------------------

  std::string visit(const json& s, const std::string& ptr, const std::string& hint) {
    step(ptr);
    DepthGuard guard(*this, ptr);
    if (s.is_boolean()) {
      if (!s.get<bool>()) nothing(ptr, "the schema is false");
      return json_value(r_);
    }
    if (!s.is_object()) fail(ptr, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      if (k == "if" && !s.contains("then") && !s.contains("else")) continue;  // no effect alone
      if (is_unsupported(k, v)) fail(ptr, "'" + k + "' is not supported");
    }

    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) fail(ptr, "'$ref' must be a string");
      json siblings = s;
      siblings.erase("$ref");
      if (opt_.ref_overrides_siblings || !has_constraints(siblings, {}))
        return visit_ref(s["$ref"].get<std::string>(), ptr);
      return visit(inline_refs(s, ptr), ptr, hint);
    }
    if (s.contains("allOf")) {
      const json merged = flatten(s, ptr);
      if (merged.is_boolean() && !merged.get<bool>()) nothing(ptr, "the allOf parts conflict");
      return visit(merged, ptr, hint);
    }
    if (s.contains("anyOf") && s.contains("oneOf")) {
      json rest = s;
      rest.erase("oneOf");
      rest["allOf"] = json::array({json{{"anyOf", s["oneOf"]}}});
      return visit(rest, ptr, hint);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return visit_any_of(s, ptr, hint);
    return visit_typed(s, ptr, hint);
  }

  // anyOf and oneOf (whose branches are not checked for overlap) as alternatives; the keywords
  // beside them go into every branch.
  std::string visit_any_of(const json& s, const std::string& ptr, const std::string& hint) {
    const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
    const json& branches = s[key];
    if (!branches.is_array() || branches.empty())
      fail(ptr, "'" + key + "' must be a non-empty array");
    json siblings = s;
    siblings.erase(key);
    const bool merge = has_constraints(siblings, {});
    std::vector<std::string> alts;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string bp = ptr + "/" + key + "/" + std::to_string(i);
      try {
        std::string e;
        if (merge) {
          const json m = merge_objects(siblings, branches[i], bp);
          if (m.is_boolean() && !m.get<bool>()) continue;
          e = visit(m, bp, hint + "-" + std::to_string(i));
        } else {
          e = visit(branches[i], bp, hint + "-" + std::to_string(i));
        }
        if (std::find(alts.begin(), alts.end(), e) == alts.end()) alts.push_back(e);
      } catch (const Unsatisfiable&) {
      }
    }
    if (alts.empty()) nothing(ptr, "no branch of '" + key + "' can be satisfied");
    return r_.add(hint, join(alts));
  }

  static std::string join(const std::vector<std::string>& alts) {
    std::string out;
    for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
    return out;
  }

  std::vector<std::string> allowed_types(const json& s, const std::string& ptr) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string())
        types.push_back(t.get<std::string>());
      else if (t.is_array())
        for (const auto& x : t) {
          if (!x.is_string()) fail(ptr, "'type' lists must hold strings");
          types.push_back(x.get<std::string>());
        }
      else
        fail(ptr, "'type' must be a string or a list of strings");
      for (const auto& x : types)
        if (std::find(kTypes.begin(), kTypes.end(), x) == kTypes.end())
          fail(ptr, "unknown type \"" + x + "\"");
      if (types.empty()) nothing(ptr, "'type' is an empty list");
    } else if (opt_.faithful) {
      types = kTypes;
    } else {
      const auto uses = [&](const std::set<std::string>& kw) {
        return std::any_of(kw.begin(), kw.end(),
                           [&](const std::string& k) { return s.contains(k); });
      };
      if (uses(object_keywords())) types.push_back("object");
      if (uses(array_keywords())) types.push_back("array");
      if (uses(string_keywords())) types.push_back("string");
      if (uses(number_keywords())) types.push_back("number");
      if (types.empty()) types = kTypes;
    }
    if (s.value("nullable", false) == true &&
        std::find(types.begin(), types.end(), "null") == types.end())
      types.push_back("null");
    // number covers integer.
    if (std::find(types.begin(), types.end(), "number") != types.end())
      types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
    return types;
  }

  std::string visit_typed(const json& s, const std::string& ptr, const std::string& hint) {
    const std::vector<std::string> types = allowed_types(s, ptr);
    const auto allowed = [&](const std::string& t) {
      return std::find(types.begin(), types.end(), t) != types.end() ||
             (t == "integer" && std::find(types.begin(), types.end(), "number") != types.end());
    };
    if (s.contains("enum") || s.contains("const")) {
      json values = json::array();
      if (s.contains("enum")) {
        if (!s["enum"].is_array()) fail(ptr, "'enum' must be an array");
        values = s["enum"];
      }
      if (s.contains("const")) {
        if (!s.contains("enum") ||
            std::find(values.begin(), values.end(), s["const"]) != values.end())
          values = json::array({s["const"]});
        else
          values = json::array();
      }
      std::vector<std::string> alts;
      std::set<std::string> seen;
      for (const auto& v : values) {
        if (!allowed(type_of_value(v))) continue;
        std::string lit = json_literal(r_, v);
        r_.charge(lit.size());
        if (seen.insert(lit).second) alts.push_back(std::move(lit));
      }
      if (alts.empty()) nothing(ptr, "no value of 'enum'/'const' has an allowed type");
      return r_.add(hint, join(alts));
    }
    std::vector<std::string> alts;
    for (const auto& t : types) {
      try {
        if (t == "null")
          alts.push_back(json_null(r_));
        else if (t == "boolean")
          alts.push_back(json_boolean(r_));
        else if (t == "object")
          alts.push_back(visit_object(s, ptr, hint));
        else if (t == "array")
          alts.push_back(visit_array(s, ptr, hint));
        else if (t == "string")
          alts.push_back(visit_string(s, ptr, hint));
        else
          alts.push_back(visit_number(s, ptr, hint, t == "integer"));
      } catch (const Unsatisfiable&) {
        if (types.size() == 1) throw;
      }
    }
    if (alts.empty()) nothing(ptr, "no allowed type can be satisfied");
    if (alts.size() == 1) return alts[0];
    return r_.add(hint, join(alts));
  }

  // Object members in a fixed order; optional ones may be left out; undeclared keys (when
  // additionalProperties allows them) after the declared ones, or between them (faithful).
  std::string visit_object(const json& s, const std::string& ptr, const std::string& hint) {
    const json props = s.value("properties", json::object());
    if (!props.is_object()) fail(ptr, "'properties' must be an object");
    const json required = s.value("required", json::array());
    if (!required.is_array()) fail(ptr, "'required' must be an array of names");
    std::vector<std::string> req;
    for (const auto& x : required) {
      if (!x.is_string()) fail(ptr, "'required' must be an array of names");
      if (std::find(req.begin(), req.end(), x.get<std::string>()) == req.end())
        req.push_back(x.get<std::string>());
    }
    const std::string sp = json_space(r_);
    const std::set<std::string> saved = std::exchange(no_progress_, {});

    // additionalProperties: what an undeclared key's value may be ("" for none).
    std::string extra;
    json addl = s.contains("additionalProperties") ? s["additionalProperties"]
                                                   : json(opt_.faithful || props.empty());
    if (addl.is_boolean()) {
      if (addl.get<bool>()) extra = json_value(r_);
    } else {
      try {
        extra = visit(addl, ptr + "/additionalProperties", hint + "-additional");
      } catch (const Unsatisfiable&) {
      }
    }

    struct Member {
      std::string name, value;
      bool required;
    };
    std::vector<Member> members;
    const auto add_member = [&](const std::string& name, bool is_required) {
      std::string value;
      const std::string pp = ptr + "/properties/" + pointer_token(name);
      try {
        if (props.contains(name))
          value = visit(props[name], pp, hint + "-" + name);
        else if (!extra.empty())
          value = extra;
        else
          nothing(ptr, "required property \"" + name + "\" is not allowed by additionalProperties");
      } catch (const Unsatisfiable&) {
        if (is_required) throw;
        return;
      }
      members.push_back({name, value, is_required});
    };
    if (!opt_.faithful)
      for (const auto& name : req) add_member(name, true);
    std::set<std::string> names;
    for (const auto& [name, _] : props.items()) names.insert(name);
    if (opt_.faithful)
      for (const auto& name : req) names.insert(name);
    for (const auto& name : names) {
      const bool is_req = std::find(req.begin(), req.end(), name) != req.end();
      if (!opt_.faithful && is_req) continue;
      if (!props.contains(name) && !is_req) continue;
      add_member(name, is_req);
    }
    no_progress_ = saved;

    std::vector<std::string> kvs;
    for (const auto& m : members)
      kvs.push_back(r_.add(hint + "-" + m.name + "-kv", gbnf_literal(json(m.name).dump()) + " " +
                                                            sp + " \":\" " + sp + " " + m.value));
    std::string extra_kv;
    if (!extra.empty()) {
      std::vector<std::string> declared;
      for (const auto& [name, _] : props.items()) declared.push_back(name);
      for (const auto& name : req) declared.push_back(name);
      extra_kv = r_.add(hint + "-additional-kv",
                        json_string_except(r_, declared) + " \":\" " + sp + " " + extra);
    }
    const std::string sep = "\",\" " + sp;
    const bool interleave = opt_.faithful && !extra_kv.empty();
    const std::string extras = extra_kv.empty() ? "" : "(" + sep + " " + extra_kv + ")*";
    // tail: members i.. after something was written; head: the same with nothing before. Heads
    // are needed up to the first required member only.
    const size_t n = members.size();
    size_t first_required = n;
    for (size_t i = 0; i < n && first_required == n; ++i)
      if (members[i].required) first_required = i;
    std::string tail = extras, head = extra_kv.empty() ? "" : "(" + extra_kv + " " + extras + ")?";
    const std::string lead = interleave ? "(" + extra_kv + " " + sep + ")* " : "";
    for (size_t i = n; i-- > 0;) {
      const std::string after = (interleave ? extras + " " : "") + tail;
      if (i <= first_required) {
        if (members[i].required)
          head = r_.add(hint + "-head", lead + kvs[i] + " " + after);
        else if (!head.empty())
          head = r_.add(hint + "-head", lead + kvs[i] + " " + after + " | " + head);
        else
          head = r_.add(hint + "-head", "(" + kvs[i] + " " + after + ")?");
      }
      if (i > 0)
        tail =
            r_.add(hint + "-tail", members[i].required ? sep + " " + kvs[i] + " " + after
                                                       : "(" + sep + " " + kvs[i] + ")? " + after);
    }
    std::string body = "\"{\" " + sp + " " + head + " \"}\" " + sp;
    return r_.add(hint + "-object", body);
  }

  std::string visit_array(const json& s, const std::string& ptr, const std::string& hint) {
    json prefix = json::array();
    json rest = true;
    std::string rest_ptr = ptr + "/items";
    if (s.contains("prefixItems")) {
      prefix = s["prefixItems"];
      if (!prefix.is_array()) fail(ptr, "'prefixItems' must be an array");
      if (s.contains("items")) rest = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {  // draft 7 tuples
      prefix = s["items"];
      if (s.contains("additionalItems"))
        rest = s["additionalItems"], rest_ptr = ptr + "/additionalItems";
    } else if (s.contains("items")) {
      rest = s["items"];
    }
    const auto bounds = count_bounds(s, ptr, "minItems", "maxItems");
    const int64_t min = bounds.first;
    int64_t max = bounds.second;

    const std::set<std::string> saved = std::exchange(no_progress_, {});
    std::vector<std::string> elems;
    for (size_t i = 0; i < prefix.size(); ++i) {
      try {
        elems.push_back(visit(prefix[i], ptr + "/prefixItems/" + std::to_string(i),
                              hint + "-" + std::to_string(i)));
      } catch (const Unsatisfiable&) {
        if (static_cast<int64_t>(i) < min) throw;
        rest = false;
        break;
      }
    }
    std::string item;
    if (!(rest.is_boolean() && !rest.get<bool>())) {
      try {
        item = visit(rest, rest_ptr, hint + "-item");
      } catch (const Unsatisfiable&) {
      }
    }
    no_progress_ = saved;

    const int64_t k = static_cast<int64_t>(elems.size());
    if (item.empty()) {
      if (min > k) nothing(ptr, "minItems needs more items than the schema allows");
      max = max == -1 ? k : std::min(max, k);
    }
    const std::string sp = json_space(r_);
    const std::string sep = "\",\" " + sp;
    // The items after the prefix, each after a comma.
    std::string tail;
    if (!item.empty() && (max == -1 || max > k)) {
      const int64_t lo = std::max<int64_t>(0, min - k), hi = max == -1 ? -1 : max - k;
      tail = repeat("(" + sep + " " + item + ")", lo, hi);
    }
    const int64_t kk = max == -1 ? k : std::min(k, max);
    for (int64_t j = kk - 1; j >= 1; --j) {
      const std::string t = sep + " " + elems[j] + (tail.empty() ? "" : " " + tail);
      tail = j < min ? r_.add(hint + "-tail", t) : "(" + r_.add(hint + "-tail", t) + ")?";
    }
    std::string head;
    if (kk > 0) {
      head = elems[0] + (tail.empty() ? "" : " " + tail);
      if (min == 0) head = "(" + head + ")?";
    } else if (!item.empty() && max != 0) {
      const int64_t lo = std::max<int64_t>(0, min - 1), hi = max == -1 ? -1 : max - 1;
      head = item + " " + repeat("(" + sep + " " + item + ")", lo, hi);
      if (min == 0) head = "(" + head + ")?";
    }
    return r_.add(hint + "-array",
                  "\"[\" " + sp + " " + head + (head.empty() ? "" : " ") + "\"]\" " + sp);
  }

  static std::string repeat(const std::string& x, int64_t lo, int64_t hi) {
    if (hi == 0) return "";
    if (lo == 0 && hi == -1) return x + "*";
    if (lo == 1 && hi == -1) return x + "+";
    if (lo == 0 && hi == 1) return x + "?";
    if (hi == -1) return x + "{" + std::to_string(lo) + ",}";
    if (lo == hi) return lo == 1 ? x : x + "{" + std::to_string(lo) + "}";
    return x + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  }

  std::string visit_string(const json& s, const std::string& ptr, const std::string& hint) {
    const std::string sp = json_space(r_);
    const std::string quote = "\"\\\"\"";
    std::string pattern;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) fail(ptr, "'pattern' must be a string");
      pattern = s["pattern"].get<std::string>();
    } else if (s.contains("format") && s["format"].is_string()) {
      auto it = format_patterns().find(s["format"].get<std::string>());
      if (it != format_patterns().end()) pattern = it->second;
    }
    if (s.contains("pattern") || !pattern.empty()) {
      const std::string at = where(ptr + (s.contains("pattern") ? "/pattern" : "/format"));
      const std::string e = regex_gbnf(r_, pattern, RegexTarget::json_string, at);
      return r_.add(hint + "-string", quote + " " + e + " " + quote + " " + sp);
    }
    const auto [min, max] = count_bounds(s, ptr, "minLength", "maxLength");
    if (min == 0 && max == -1) return json_string(r_);
    return r_.add(hint + "-string",
                  quote + " " + repeat(json_char(r_), min, max) + " " + quote + " " + sp);
  }

  std::string visit_number(const json& s, const std::string& ptr, const std::string& hint,
                           bool integer) {
    // Bounds: draft 6+ numbers, or draft 4's boolean exclusive flags.
    std::optional<double> lo, hi;
    bool lo_excl = false, hi_excl = false;
    const auto num = [&](const char* key) -> std::optional<double> {
      if (!s.contains(key)) return std::nullopt;
      if (s[key].is_boolean()) return std::nullopt;
      if (!s[key].is_number()) fail(ptr, std::string("'") + key + "' must be a number");
      return s[key].get<double>();
    };
    lo = num("minimum");
    hi = num("maximum");
    if (s.value("exclusiveMinimum", json(false)) == true) lo_excl = true;
    if (s.value("exclusiveMaximum", json(false)) == true) hi_excl = true;
    if (auto e = num("exclusiveMinimum"); e && (!lo || *e >= *lo)) lo = e, lo_excl = true;
    if (auto e = num("exclusiveMaximum"); e && (!hi || *e <= *hi)) hi = e, hi_excl = true;
    const std::string sp = json_space(r_);
    if (integer) {
      std::optional<int64_t> ilo, ihi;
      constexpr double kLimit = 9e18;
      if (lo && std::fabs(*lo) < kLimit)
        ilo = static_cast<int64_t>(lo_excl ? std::floor(*lo) + 1 : std::ceil(*lo));
      if (hi && std::fabs(*hi) < kLimit)
        ihi = static_cast<int64_t>(hi_excl ? std::ceil(*hi) - 1 : std::floor(*hi));
      if (lo && *lo >= kLimit && (!hi || *hi >= *lo)) ilo.reset();
      if (ilo && ihi && *ilo > *ihi) nothing(ptr, "no integer lies between the bounds");
      if (lo && hi && *lo > *hi) nothing(ptr, "minimum > maximum");
      if (!ilo && !ihi) return json_integer(r_);
      return r_.add(hint + "-int", integer_range_gbnf(ilo, ihi) + " " + sp);
    }
    if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_excl || hi_excl))))
      nothing(ptr, "no number lies between the bounds");
    // Whole-number bounds are exact (the number then has no exponent); of others only the sign
    // is enforced.
    const auto whole = [](const std::optional<double>& b) {
      return !b || (std::floor(*b) == *b && std::fabs(*b) < 1e15);
    };
    if ((lo || hi) && whole(lo) && whole(hi)) {
      std::optional<int64_t> ilo, ihi;
      if (lo) ilo = static_cast<int64_t>(*lo);
      if (hi) ihi = static_cast<int64_t>(*hi);
      return r_.add(hint + "-num", bounded_decimal(ilo, lo_excl, ihi, hi_excl) + " " + sp);
    }
    const std::string body = json_unsigned_number_body() + " " + sp;
    if (lo && *lo >= 0) return r_.add(hint + "-num", body);
    if (hi && (*hi < 0 || (*hi == 0 && hi_excl))) return r_.add(hint + "-num", "\"-\" " + body);
    return json_number(r_);
  }

  // Decimals (no exponent) between whole-number bounds: an integer part in range with any
  // fraction, the bound itself with a zero fraction, or (exclusive) a non-zero one.
  static std::string bounded_decimal(std::optional<int64_t> lo, bool lo_excl,
                                     std::optional<int64_t> hi, bool hi_excl) {
    std::vector<std::string> alts;
    // Magnitudes m >= 0 in [l, h] (h absent: unbounded), each side inclusive or not.
    const auto magnitudes = [](int64_t l, bool lx, std::optional<int64_t> h, bool hx) {
      const std::string any = "(\".\" [0-9]{1,17})?", zero = "(\".\" \"0\"{1,17})?",
                        nonzero = "\".\" [0-9]{0,16} [1-9] [0-9]{0,16}";
      std::vector<std::string> m;
      const int64_t from = lx ? l + 1 : l;
      if (!h || from <= *h - 1) {
        std::optional<int64_t> to;
        if (h) to = *h - 1;
        m.push_back("(" + integer_range_gbnf(from, to) + ") " + any);
      }
      if (lx && (!h || l <= *h - 1)) m.push_back("\"" + std::to_string(l) + "\" " + nonzero);
      if (h && !hx && (*h > l || !lx)) m.push_back("\"" + std::to_string(*h) + "\" " + zero);
      return m;
    };
    // v >= 0, written without a sign.
    if (!hi || *hi > 0 || (*hi == 0 && !hi_excl)) {
      const bool from_lo = lo && *lo >= 0;
      for (auto& a : magnitudes(from_lo ? *lo : 0, from_lo && lo_excl, hi, hi_excl))
        alts.push_back(a);
    }
    // v < 0: "-" and a magnitude -v, which v >= lo bounds above and v <= hi below.
    if (!lo || *lo < 0) {
      const bool from_hi = hi && *hi <= 0;
      std::optional<int64_t> top;
      if (lo) top = -*lo;
      for (auto& a :
           magnitudes(from_hi ? -*hi : 0, from_hi ? (hi_excl || *hi == 0) : true, top, lo_excl))
        alts.push_back("\"-\" " + a);
    }
    std::string out;
    for (const auto& a : alts) out += (out.empty() ? "" : " | ") + std::string("(") + a + ")";
    return "(" + out + ")";
  }

  const json& root_;
  JsonSchemaOptions opt_;
  GbnfRules r_;
  std::map<std::string, std::string> ref_rules_;  // "#/$defs/x" -> its rule
  std::set<std::string> no_progress_;             // refs entered since the last { or [
  int depth_ = 0;
  int steps_ = 0;
};

}  // namespace

std::string gbnf_from_json_schema(const json& schema, const JsonSchemaOptions& options) {
  return SchemaCompiler(schema, options).compile();
}

std::string gbnf_from_json_schema(const json& schema) {
  return gbnf_from_json_schema(schema, JsonSchemaOptions{});
}

std::string gbnf_any_json_object() {
  GbnfRules r("json_object");
  return r.text(json_object(r));
}

}  // namespace sandwich::engine::grammar
