// The Jinja interpreter: jinja2's whitespace control (trim_blocks and lstrip_blocks on, as HF
// renders chat templates), scoping, Python's values and operators, the filters, tests and
// methods chat templates use; errors that name the place; limits that stop runaway templates.
#include "engine/text/jinja.h"

#include <gtest/gtest.h>

namespace sandwich::engine::jinja {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& src, const ordered_json& ctx = ordered_json::object()) {
  return Template(src).render(ctx);
}

std::string error_of(const std::string& src, const ordered_json& ctx = ordered_json::object(),
                     const RenderLimits& limits = {}) {
  try {
    Template(src).render(ctx, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Jinja, TextOutputAndComments) {
  EXPECT_EQ(render("Hello {{ name }}!{# not shown #}", {{"name", "you"}}), "Hello you!");
  EXPECT_EQ(render(""), "");
  EXPECT_EQ(render("{{ 'a' 'b' }}{{ \"c\\n\" }}"), "abc\n");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
  // One trailing newline goes, as jinja2 reads templates; \r\n reads as \n.
  EXPECT_EQ(render("a\n"), "a");
  EXPECT_EQ(render("a\r\nb\n\n"), "a\nb\n");
}

TEST(Jinja, WhitespaceControl) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: its indent too.
  EXPECT_EQ(render("{% if true %}\n  yes\n{% endif %}\n"), "  yes\n");
  EXPECT_EQ(render("  {% if true %}\nx\n  {% endif %}\ny"), "x\ny");
  // Not after an expression.
  EXPECT_EQ(render("{{ 1 }}\n{{ 2 }}"), "1\n2");
  // '-' strips all whitespace on its side, newlines included; '+' keeps the indent.
  EXPECT_EQ(render("a  \n {{- 'b' -}} \n c"), "abc");
  EXPECT_EQ(render("x\n  {%+ if true %}y{% endif %}"), "x\n  y");
  EXPECT_EQ(render("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}"), "  1\n  2\n");
  // lstrip only when the tag starts its line.
  EXPECT_EQ(render("a {% if true %}b{% endif %}"), "a b");
  EXPECT_EQ(render("{# c #}\nx"), "x");
}

TEST(Jinja, ForLoops) {
  const ordered_json ctx = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(
      render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ x }}"
             "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}",
             ctx),
      "10aTrueFalse33;21bFalseFalse32;32cFalseTrue31;");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ loop.index }}{{ x }}{% endfor %}", ctx),
            "1a2c");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"),
            "a=1,b=2,");
  EXPECT_EQ(
      render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx),
      "a");
  EXPECT_EQ(
      render("{% for x in xs %}{% if loop.first %}{% continue %}{% endif %}{{ x }}{% endfor %}",
             ctx),
      "bc");
  EXPECT_EQ(render("{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "[h][é]");
  // A set in a loop stays in it (jinja2's scoping); a namespace carries values out.
  EXPECT_EQ(render("{% set n = 0 %}{% for x in xs %}{% set n = n + 1 %}{% endfor %}{{ n }}", ctx),
            "0");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + 1 %}"
                   "{% endfor %}{{ ns.n }}",
                   ctx),
            "3");
}

TEST(Jinja, IfSetAndMacros) {
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {{"b", 1}}), "B");
  EXPECT_EQ(render("{% if x %}{% set y = 'in' %}{% endif %}{{ y }}", {{"x", true}}), "in");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a + b }}"), "3");
  EXPECT_EQ(render("{% set block %}  text {{ 1 }}{% endset %}[{{ block }}]"), "[  text 1]");
  EXPECT_EQ(render("{% macro greet(who, end='!') %}Hi {{ who }}{{ end }}{% endmacro %}"
                   "{{ greet('a') }} {{ greet('b', end='?') }}"),
            "Hi a! Hi b?");
  EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
}

TEST(Jinja, Expressions) {
  const ordered_json ctx = {{"m", {{"role", "user"}, {"content", " Hi "}}}, {"xs", {1, 2, 3, 4}}};
  EXPECT_EQ(render("{{ m['role'] }}{{ m.role }}{{ m.missing }}", ctx), "useruser");
  EXPECT_EQ(render("{{ xs[1:] }}{{ xs[::-1] }}{{ xs[-1] }}{{ xs[:-2] }}{{ 'hello'[1:3] }}", ctx),
            "[2, 3, 4][4, 3, 2, 1]4[1, 2]el");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"),
            "3 -4 1 2 3.5 1024");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }}"),
            "7 9 a1None abab");
  EXPECT_EQ(
      render("{{ 1 < 2 and not 2 < 1 }} {{ 0 or 'x' }} {{ 'u' in 'user' }} {{ 5 not in xs }}", ctx),
      "True x True True");
  EXPECT_EQ(render("{{ 'yes' if m.role == 'user' else 'no' }}{{ 'x' if false }}", ctx), "yes");
  EXPECT_EQ(render("{{ {'a': [1, 'b', none, true]} }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }}"),
            "{'a': [1, 'b', None, True]} 1.0 0.30000000000000004 1e+20");
  EXPECT_EQ(
      render("{{ m.content.strip() }}|{{ m.content.lstrip() }}|{{ m.content.rstrip() }}", ctx),
      "Hi|Hi | Hi");
  EXPECT_EQ(render("{{ 'a,b'.split(',') }} {{ ' a  b '.split() }} {{ 'ab'.startswith('a') }}"
                   "{{ 'ab'.endswith(('x', 'b')) }} {{ 'hi there'.title() }} {{ 'aB'.upper() }}"),
            "['a', 'b'] ['a', 'b'] TrueTrue Hi There AB");
  EXPECT_EQ(render("{{ m.get('role') }}{{ m.get('x', 'd') }}{{ m.keys() | list }}", ctx),
            "userd['role', 'content']");
  EXPECT_EQ(render("{{ m is mapping }}{{ xs is iterable }}{{ q is defined }}{{ q is undefined }}"
                   "{{ none is none }}{{ 'a' is string }}{{ 3 is odd }}{{ xs is not string }}",
                   ctx),
            "TrueTrueFalseTrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ undefined_thing }}|{{ undefined_thing | default('d') }}"), "|d");
}

TEST(Jinja, Filters) {
  const ordered_json ctx = {{"ms",
                             {{{"role", "user"}, {"content", "a"}},
                              {{"role", "assistant"}, {"content", "b"}},
                              {{"role", "user"}, {"content", "c"}}}}};
  EXPECT_EQ(render("{{ '  x  ' | trim }}|{{ 'ab' | upper }}{{ 'AB' | lower }}|{{ 'hello world' | "
                   "title }}|{{ 'hELLO' | capitalize }}"),
            "x|ABab|Hello World|Hello");
  EXPECT_EQ(render("{{ ms | length }}{{ 'héllo' | length }}{{ (ms | first).content }}"
                   "{{ (ms | last).content }}",
                   ctx),
            "35ac");
  EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | "
                   "join(', ') }}|{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}",
                   ctx),
            "a, c|1");
  EXPECT_EQ(render("{{ ['a', 'b'] | join }}{{ 'aXbX' | replace('X', '-') }}{{ 3 | string }}"
                   "{{ '42' | int + 1 }}{{ 'x' | int }}{{ {'k': 1} | items | list }}"),
            "aba-b-3430[['k', 1]]");
  EXPECT_EQ(render("{{ {'a': 'é\"\\n', 'b': [1, 2.5, none, true]} | tojson }}"),
            "{\"a\": \"é\\\"\\n\", \"b\": [1, 2.5, null, true]}");
  EXPECT_EQ(render("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(
      render("{{ none | default('d', true) }}{{ '' | default('e', true) }}{{ 0 | default(5) }}"),
      "de0");
}

TEST(Jinja, RaiseExceptionAndErrors) {
  EXPECT_EQ(error_of("{{ raise_exception('Roles must alternate') }}"), "Roles must alternate");
  EXPECT_EQ(error_of("{% if x %}"), "line 1, column 11: the template ends before '{% elif %}'");
  EXPECT_EQ(error_of("a\n{% endfor %}"), "line 2, column 4: unknown or misplaced tag 'endfor'");
  EXPECT_EQ(error_of("{{ 1 + }}"), "line 1, column 8: expected an expression, got '}}'");
  EXPECT_EQ(error_of("{{ 'abc }}"), "line 1, column 4: unterminated string");
  EXPECT_EQ(error_of("{{ x"), "line 1, column 1: unclosed expression ('{{' without '}}')");
  EXPECT_EQ(error_of("{# x"), "line 1, column 1: unclosed comment ('{#' without '#}')");
  EXPECT_EQ(error_of("{{ x | nope }}"), "line 1, column 6: unknown filter 'nope'");
  EXPECT_EQ(error_of("\n  {{ a.b.c }}"), "line 2, column 7: 'a' is undefined");
  EXPECT_EQ(error_of("\n  {{ a.b.c }}", {{"a", {{"x", 1}}}}), "line 2, column 9: 'b' is undefined");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"),
            "line 1, column 4: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "line 1, column 4: integer division by zero");
  EXPECT_EQ(error_of("{% for x in none %}{% endfor %}"),
            "line 1, column 13: 'NoneType' object is not iterable");
  EXPECT_EQ(error_of("{% set x.y = 1 %}"),
            "line 1, column 4: cannot set an attribute of 'x': not a namespace()");
}

TEST(Jinja, RunawayTemplatesAreStopped) {
  RenderLimits small;
  small.max_steps = 100000;
  small.max_output = 1 << 20;
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                     ordered_json::object(), small)
                .find("the template ran too long"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                     ordered_json::object(), small)
                .find("macros call each other deeper than 100 levels"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}"
                     "{% set ns.s = ns.s + ns.s %}{% endfor %}",
                     ordered_json::object(), small)
                .find("more than the limit of"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000000 }}", ordered_json::object(), small)
                .find("more than the limit of"),
            std::string::npos);
  EXPECT_NE(error_of("{{ range(100000000) }}", ordered_json::object(), small)
                .find("range() of more than"),
            std::string::npos);
  EXPECT_NE(
      error_of("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
               "{% endfor %}")
          .find("a value nests deeper than 256 levels"),
      std::string::npos);
  // Namespaces nest too, and one holding itself is as deep as it gets.
  EXPECT_NE(error_of("{% set ns = namespace(p=none) %}{% for i in range(1000) %}"
                     "{% set ns.p = namespace(p=ns.p) %}{% endfor %}")
                .find("a value nests deeper than 256 levels"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}")
                .find("a value nests deeper than 256 levels"),
            std::string::npos);
  // Deep nesting is refused when parsed, before it could exhaust the stack.
  EXPECT_NE(error_of("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}")
                .find("nests deeper than"),
            std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}")
                .find("nests deeper than"),
            std::string::npos);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_NE(error_of(ifs).find("nests deeper than"), std::string::npos);
}

TEST(Jinja, GarbageNeverCrashes) {
  // Every prefix of a real template, and bytes shuffled: an Error or a render, nothing else.
  const std::string t =
      "{%- if messages[0]['role'] == 'system' %}{% set s = messages[0]['content'] | trim %}"
      "{%- endif %}{% for m in messages[1:] if m.role != 'x' %}{{ '<|' ~ m['role'] ~ '|>\\n' + "
      "m.content.strip() }}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}"
      "{% endif %}{% endfor %}{# done #}";
  const ordered_json ctx = {{"messages", {{{"role", "system"}, {"content", "s"}}}},
                            {"add_generation_prompt", true}};
  RenderLimits small;
  small.max_steps = 10000;
  for (size_t n = 0; n <= t.size(); ++n) {
    try {
      Template(t.substr(0, n)).render(ctx, small);
    } catch (const Error&) {
    }
  }
  uint32_t seed = 1;
  for (int round = 0; round < 2000; ++round) {
    std::string g = t;
    for (int k = 0; k < 4; ++k) {
      seed = seed * 1664525u + 1013904223u;
      const size_t a = (seed >> 8) % g.size();
      seed = seed * 1664525u + 1013904223u;
      g[a] = "{}%#-+()[]'\"|.,:~ \nab0"[(seed >> 8) % 22];
    }
    try {
      Template(g).render(ctx, small);
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace sandwich::engine::jinja
