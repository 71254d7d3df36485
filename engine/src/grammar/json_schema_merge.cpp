#include "grammar/json_schema_merge.h"

#include <algorithm>
#include <set>

#include "engine/grammar/grammar.h"

namespace sandwich::engine::grammar {

using nlohmann::json;

bool is_annotation(const std::string& k) {
  static const std::set<std::string> names = {"title",
                                              "description",
                                              "examples",
                                              "default",
                                              "$schema",
                                              "$id",
                                              "id",
                                              "$comment",
                                              "deprecated",
                                              "readOnly",
                                              "writeOnly",
                                              "$anchor",
                                              "$dynamicAnchor",
                                              "$recursiveAnchor",
                                              "$vocabulary",
                                              "contentEncoding",
                                              "contentMediaType",
                                              "contentSchema",
                                              "$defs",
                                              "definitions"};
  return names.count(k) || k.rfind("x-", 0) == 0;
}

namespace {

constexpr size_t kMaxPairs = 256;

std::vector<std::string> types_of(const json& t) {
  if (t.is_string()) return {t.get<std::string>()};
  std::vector<std::string> out;
  if (t.is_array())
    for (const auto& x : t)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

json intersect_types(const json& a, const json& b) {
  const auto ta = types_of(a), tb = types_of(b);
  json out = json::array();
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (const auto& t : ta) {
    if (has(tb, t))
      out.push_back(t);
    else if (t == "integer" && has(tb, "number"))
      out.push_back("integer");
    else if (t == "number" && has(tb, "integer"))
      out.push_back("integer");
  }
  return out;
}

json both(const json& a, const json& b) {
  if (a == b) return a;
  return json{{"allOf", json::array({a, b})}};
}

// What additionalProperties says of a key the schema does not declare (absent: anything).
json additional_of(const json& s) {
  return s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
}

}  // namespace

json merge_schemas(const json& a, const json& b, const std::string& where) {
  json out = a;
  for (const auto& [k, vb] : b.items()) {
    if (is_annotation(k)) continue;
    if (!out.contains(k)) {
      out[k] = vb;
      continue;
    }
    const json va = out[k];
    if (va == vb) continue;
    if (k == "type") {
      out[k] = intersect_types(va, vb);
    } else if (k == "enum" || k == "const") {
      json ea = k == "enum" ? va : json::array({va});
      json eb = k == "enum" ? vb : json::array({vb});
      json common = json::array();
      for (const auto& x : ea)
        if (std::find(eb.begin(), eb.end(), x) != eb.end()) common.push_back(x);
      out.erase(k);
      out["enum"] = common;
    } else if (k == "required") {
      json req = va;
      for (const auto& x : vb)
        if (std::find(req.begin(), req.end(), x) == req.end()) req.push_back(x);
      out[k] = req;
    } else if (k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems") {
      if (va.is_number() && vb.is_number())
        out[k] = va.get<double>() >= vb.get<double>() ? va : vb;
      else
        out[k] = va.is_boolean() ? va : vb;  // draft 4's boolean exclusive bounds
    } else if (k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems") {
      if (va.is_number() && vb.is_number())
        out[k] = va.get<double>() <= vb.get<double>() ? va : vb;
      else
        out[k] = va.is_boolean() ? va : vb;
    } else if (k == "items" || k == "additionalItems" || k == "additionalProperties") {
      out[k] = both(va, vb);
    } else if (k == "prefixItems" && va.is_array() && vb.is_array()) {
      json p = json::array();
      for (size_t i = 0; i < std::max(va.size(), vb.size()); ++i)
        p.push_back(i < va.size() && i < vb.size() ? both(va[i], vb[i])
                                                   : (i < va.size() ? va[i] : vb[i]));
      out[k] = p;
    } else if (k == "anyOf" || k == "oneOf") {
      if (!va.is_array() || !vb.is_array() || va.size() * vb.size() > kMaxPairs)
        throw GrammarError(where + ": allOf of two anyOf/oneOf lists makes more than " +
                           std::to_string(kMaxPairs) + " alternatives");
      json pairs = json::array();
      for (const auto& x : va)
        for (const auto& y : vb) pairs.push_back(both(x, y));
      out[k] = pairs;
    } else if (k == "nullable") {
      out[k] = va.is_boolean() && vb.is_boolean() && va.get<bool>() && vb.get<bool>();
    } else if (k != "properties") {
      throw GrammarError(where + ": allOf with two different '" + k + "' cannot be combined");
    }
  }
  // Properties: a key declared on one side only still meets the other's additionalProperties.
  if (a.contains("properties") || b.contains("properties")) {
    const json pa = a.value("properties", json::object()),
               pb = b.value("properties", json::object());
    if (!pa.is_object() || !pb.is_object()) return out;  // the converter reports the bad value
    json props = json::object();
    for (const auto& [k, v] : pa.items())
      props[k] = pb.contains(k) ? both(v, pb[k]) : both(v, additional_of(b));
    for (const auto& [k, v] : pb.items())
      if (!pa.contains(k)) props[k] = both(v, additional_of(a));
    for (auto& [k, v] : props.items())
      if (v.is_object() && v.contains("allOf") && v["allOf"].size() == 2 && v["allOf"][1] == true)
        v = v["allOf"][0];
    out["properties"] = props;
  }
  return out;
}

}  // namespace sandwich::engine::grammar
