#pragma once
// Chat templates an attacker would ship in a model file: chains and nesting far past any real
// template's (20,000 terms: too long to keep as files), integer overflow, and expressions that
// amplify a little text into gigabytes. Each must end in a jinja::Error, never a crash or a huge
// allocation. Shared by the interpreter's tests (jinja_hostile_test.cpp) and the fuzz targets'
// seeds (generated_seeds.h). n: the length of chains and nesting; big: the size of the strings
// the amplifying ones start from (just under the per-value limit the caller renders with).
// Returns name -> template source.
#include <map>
#include <string>

namespace sandwich::test {

inline std::string repeated(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The template `{{ head <op> term <op> term ... }}` of n terms.
inline std::string chain(const std::string& head, const std::string& link, int n) {
  return "{{ " + head + repeated(link, n) + " }}";
}

inline std::map<std::string, std::string> hostile_templates(int n, size_t big) {
  std::map<std::string, std::string> t;
  const std::string b = std::to_string(big), s = "{% set s = 'x' * " + b + " %}";
  const std::string h = "{% set h = 'x' * " + std::to_string(big / 2) + " %}";
  // Left-leaning trees as tall as the chain: built by the parser's loops, not its recursion.
  t["chain_plus"] = chain("1", " + 1", n);
  t["chain_tilde"] = chain("'a'", " ~ 'a'", n);
  t["chain_filter"] = chain("x", "|string", n);
  t["chain_attr"] = chain("a", ".x", n);
  t["chain_item"] = chain("a", "[0]", n);
  t["chain_call"] = chain("f", "()", n);
  t["chain_compare"] = chain("1", " < 1", n);
  t["chain_is"] = chain("x", " is defined", n);
  t["chain_and"] = chain("x", " and x", n);
  t["chain_mul"] = chain("2", " * 1", n);
  t["chain_ternary"] = chain("1", " if x else 1", n);
  // Recursion in the parser.
  t["nested_not"] = "{{ " + repeated("not ", n) + "x }}";
  t["nested_neg"] = "{{ " + repeated("-(", n) + "1" + repeated(")", n) + " }}";
  t["nested_list"] = "{{ " + repeated("[", n) + repeated("]", n) + " }}";
  t["nested_if"] = repeated("{% if true %}", n) + "x" + repeated("{% endif %}", n);
  t["nested_for"] = repeated("{% for i in [1] %}", n) + "x" + repeated("{% endfor %}", n);
  // Macro recursion with a tall expression in each frame.
  t["macro_tall_frames"] = "{% macro f(n) %}{{ " + repeated("(", 90) + "f(n + 1)" +
                           repeated(" ~ 'a')", 90) + " }}{% endmacro %}{{ f(0) }}";
  // Values nested deep, then printed and compared.
  t["deep_value"] =
      "{% set ns = namespace(x=[]) %}{% for i in range(300) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x|tojson }}{{ ns.x == ns.x }}{{ ns.x|string }}";
  // Integer overflow, and floats too big for an int.
  t["overflow"] =
      "{{ (-9223372036854775807 - 1) // -1 }}{{ (-9223372036854775807 - 1) % -1 }}"
      "{{ 9223372036854775807 + 1 }}{{ -(-9223372036854775807 - 1) }}{{ 2 ** 64 }}"
      "{{ (-9223372036854775807 - 1)|abs }}{{ 1e300|int }}{{ '1e300'|int }}{{ '%d' % 1e300 }}"
      "{{ [9223372036854775807, 1]|sum }}{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"
      "{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) }}"
      "{{ [1, 2, 3][::9223372036854775807] }}{{ 'abc'[::-9223372036854775807 - 1] }}"
      "{{ [1, 2][-9223372036854775807 - 1] }}{{ 9223372036854775807 * 2 }}";
  t["overflow_div"] = "{{ (-9223372036854775807 - 1) // -1 }}";
  t["overflow_mod"] = "{{ (-9223372036854775807 - 1) % -1 }}";
  t["overflow_neg"] = "{{ -(-9223372036854775807 - 1) }}";
  t["overflow_int"] = "{{ 1e300|int }}";
  t["overflow_pow"] = "{{ 3 ** 40 }}";
  t["overflow_slice"] = "{{ 'abcdef'[1:-9223372036854775807 - 1:-9223372036854775807] }}";
  t["overflow_range"] = "{{ range(9223372036854775800, 9223372036854775807, 3) }}";
  // Amplification: a little text into gigabytes.
  t["amp_repeat"] = "{{ 'x' * 9223372036854775807 }}";
  t["amp_list_repeat"] = "{{ [1, 2, 3] * 4611686018427387904 }}";
  t["amp_chars"] = s + "{{ (s|list)|length }}";
  t["amp_list_of_big"] = s + "{{ ([s] * 30)|length }}";
  t["amp_replace"] = s + "{{ s|replace('x', 'yyyyyyyy')|length }}";
  t["amp_replace_method"] = s + "{{ s.replace('x', 'yyyyyyyy')|length }}";
  t["amp_indent"] = "{{ ('\\n' * " + b + ")|indent(200, true, true)|length }}";
  t["amp_join"] = h + "{{ [h, h]|join(h)|length }}";
  t["amp_join_method"] = h + "{{ h.join([h, h])|length }}";
  t["amp_split"] = s + "{{ s.split('x')|length }}";
  t["amp_tojson"] = "{{ ['\"' * " + b + "]|tojson|length }}";
  t["amp_repr"] = "{{ ['\\n' * " + b + "]|string|length }}";
  t["amp_escape"] = "{{ ('<' * " + b + ")|escape|length }}";
  t["amp_concat"] = s + "{{ (s ~ s ~ s)|length }}";
  t["amp_plus"] = s + "{{ (s + s + s)|length }}";
  t["amp_list_plus"] = s + "{{ ([s] + [s] + [s])|length }}";
  t["amp_concat_live"] = s + "{{ " + repeated("s ~ (", 20) + "s" + repeated(")", 20) + "|length }}";
  t["amp_macro_frames"] =
      "{% macro f(n, s) %}{% if n > 0 %}{{ f(n - 1, s ~ 'y') }}{% endif %}{{ s|length }}"
      "{% endmacro %}{{ f(90, 'x' * " +
      b + ") }}";
  t["amp_namespace"] = "{% set ns = namespace(l=[]) %}{% set s = 'x' * " +
                       std::to_string(big / 100) +
                       " %}{% for i in range(5000) %}{% set ns.l = ns.l + [s] %}{% endfor %}"
                       "{{ ns.l|length }}";
  t["amp_namespace_attrs"] = "{% set ns = namespace() %}" + s +
                             "{% for i in range(100) %}{% set ns.a = ns.a ~ s %}{% endfor %}";
  t["amp_items"] = h + "{% set d = {'a': h, 'b': h} %}{% for i in range(1000) %}" +
                   "{% set x = d.items() %}{% endfor %}";
  t["amp_format"] = s + "{{ ('%s%s%s' % (s, s, s))|length }}";
  t["amp_format_filter"] = s + "{{ '%s%s%s'|format(s, s, s)|length }}";
  t["amp_map"] = h + "{% set l = [h, h] %}{{ (l|map('string')|list + l|select|list)|length }}";
  t["amp_unique"] = "{{ range(100000)|unique|length }}";
  t["amp_slice_chars"] = "{{ ('\xc3\xa9' * " + std::to_string(big / 2) + ")[::-1]|length }}";
  t["amp_loop_vars"] = s + "{% for i in range(100000) %}{% set a = s %}{% set b = s %}{% endfor %}";
  return t;
}

}  // namespace sandwich::test
