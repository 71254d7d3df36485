// Templates written to hurt (a model file from the internet brings its own): integer overflow,
// chains and nesting far past any real template's, values that amplify a little text into
// gigabytes, renders on threads with small stacks. Each ends in a jinja::Error naming the
// problem, without a crash and before building anything big; published templates still render
// megabytes of conversation under the default limits.
#include <gtest/gtest.h>
#include <pthread.h>

#include <fstream>
#include <set>
#include <string>

#include "engine/text/chat_template.h"
#include "engine/text/jinja.h"
#include "hostile_templates.h"
#include "test_data.h"

namespace sandwich::engine::jinja {
namespace {

using nlohmann::ordered_json;

// Small limits, so that the amplifying templates are stopped after megabytes, not gigabytes.
constexpr size_t kBig = 3'000'000;
RenderLimits test_limits() {
  RenderLimits l;
  l.max_output = 4u << 20;
  l.max_total_bytes = 48u << 20;
  return l;
}

ordered_json context() {
  return {{"x", "x"},
          {"a", {{"x", 1}}},
          {"messages", {{{"role", "user"}, {"content", "hi"}}}},
          {"add_generation_prompt", true}};
}

std::string error_of(const std::string& src, const RenderLimits& limits = test_limits()) {
  try {
    Template(src).render(context(), limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Starts the process's peak resident memory afresh (other tests in this binary may have used
// more); false where the kernel does not let us.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// The process's peak resident memory (VmHWM), in MiB.
size_t peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6)) >> 10;
  return 0;
}

TEST(JinjaHostile, IntegerOverflowIsAnError) {
  for (const char* t : {
           "{{ (-9223372036854775807 - 1) // -1 }}",
           "{{ 9223372036854775807 + 1 }}",
           "{{ -9223372036854775807 - 2 }}",
           "{{ 9223372036854775807 * 2 }}",
           "{{ -(-9223372036854775807 - 1) }}",
           "{{ 2 ** 64 }}",
           "{{ 3 ** 40 }}",
           "{{ (-9223372036854775807 - 1)|abs }}",
           "{{ [9223372036854775807, 1]|sum }}",
           "{{ 1e300|int }}",
           "{{ -1e19|int }}",
           "{{ '1e300'|int }}",
           "{{ '%d' % 1e300 }}",
           "{{ '99999999999999999999'|int }}",
           "{{ ' -1e19 '|int }}",
       }) {
    SCOPED_TRACE(t);
    EXPECT_NE(error_of(t).find("integer overflow in"), std::string::npos) << error_of(t);
  }
  EXPECT_EQ(error_of("{{ (-9223372036854775807 - 1) // -1 }}"),
            "line 1, column 5: integer overflow in '//'");
}

TEST(JinjaHostile, IntegerExtremesWithinRangeComputeAsPython) {
  auto r = [](const std::string& t) { return Template(t).render(context(), test_limits()); };
  EXPECT_EQ(r("{{ (-9223372036854775807 - 1) % -1 }}"), "0");
  EXPECT_EQ(r("{{ 7 // -1 }} {{ -7 % -1 }} {{ -7 // 2 }} {{ -7 % 2 }}"), "-7 0 -4 1");
  EXPECT_EQ(r("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"), "True");
  EXPECT_EQ(r("{{ 3 ** 39 }} {{ (-2) ** 63 }}"), "4052555153018976267 -9223372036854775808");
  EXPECT_EQ(r("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) }}"),
            "[-9223372036854775808, -4611686018427387904, 0, 4611686018427387904]");
  EXPECT_EQ(r("{{ range(9223372036854775800, 9223372036854775807, 3) }}"),
            "[9223372036854775800, 9223372036854775803, 9223372036854775806]");
  EXPECT_EQ(r("{{ range(0, -9223372036854775807 - 1, -9223372036854775807 - 1) }}"), "[0]");
  EXPECT_EQ(r("{{ [1, 2, 3][::9223372036854775807] }}"), "[1]");
  EXPECT_EQ(r("{{ [1, 2, 3][::-9223372036854775807 - 1] }}"), "[3]");
  EXPECT_EQ(r("{{ 'abcdef'[1:-9223372036854775807 - 1:-9223372036854775807] }}"), "b");
  EXPECT_EQ(r("{{ 'abc'[-9223372036854775807 - 1:9223372036854775807] }}"), "abc");
  EXPECT_EQ(r("{{ [1, 2][-9223372036854775807 - 1] }}|{{ 'ab'[9223372036854775807] }}"), "|");
  EXPECT_EQ(r("{{ 'x' * -9223372036854775807 }}|{{ [1] * -5 }}|{{ '' * 9223372036854775807 }}"),
            "|[]|");
  EXPECT_EQ(r("{{ 1.5|int }} {{ -2.9|int }} {{ 'nan'|int(7) }} {{ 2.5|round }}"), "1 -2 7 3.0");
  EXPECT_EQ(r("{{ ' +5 '|int }} {{ '-3.9'|int }} {{ 'abc'|int(7) }} {{ '1e999'|int(7) }} "
              "{{ '9223372036854775807'|int }}"),
            "5 -3 7 7 9223372036854775807");
  EXPECT_EQ(r("{{ [[1]]|map(attribute='99999999999999999999')|list|length }}"), "1");
  EXPECT_NE(error_of("{{ a.99999999999999999999 }}").find("number out of range"),
            std::string::npos);
  EXPECT_EQ(r("{{ 'h\xc3\xa9llo'[::-1] }} {{ 'h\xc3\xa9llo'[1:3] }} {{ 'h\xc3\xa9llo'|last }} "
              "{{ 'h\xc3\xa9llo'|reverse }} {{ 'h\xc3\xa9llo'[1] }} {{ 'h\xc3\xa9llo'|length }}"),
            "oll\xc3\xa9h \xc3\xa9l o oll\xc3\xa9h \xc3\xa9 5");
}

TEST(JinjaHostile, SearchesFindMatchesAcrossTheirWindows) {
  // Substring search looks in growing windows (linear, even under ASan): matches that straddle
  // a window's end are found, and each of many matches in turn.
  auto r = [](const std::string& t) { return Template(t).render(context(), test_limits()); };
  for (int pad : {0, 1, 250, 251, 252, 253, 300, 1000, 5000})
    EXPECT_EQ(r("{{ ('a' * " + std::to_string(pad) + " ~ 'needle' ~ 'a' * 7).find('needle') }}"),
              std::to_string(pad));
  EXPECT_EQ(r("{{ ('ab' * 100000).count('ba') }} {{ ('ab' * 100000).replace('ba', '')|length }} "
              "{{ ('ab' * 100000).split('ba')|length }} {{ 'needle' in ('a' * 4000 ~ 'needle') }}"),
            "99999 2 100000 True");
}

TEST(JinjaHostile, LongChainsAndDeepNestingAreRefusedWhenParsed) {
  for (const auto& [name, t] : test::hostile_templates(20000, kBig)) {
    if (name.rfind("chain_", 0) != 0 && name.rfind("nested_", 0) != 0) continue;
    SCOPED_TRACE(name);
    EXPECT_NE(error_of(t).find("nests deeper than"), std::string::npos) << error_of(t);
  }
  EXPECT_EQ(error_of(test::chain("1", " + 1", 20000)).substr(0, 49),
            "line 1, column 4: the expression nests deeper tha");
  // Chains as long as real templates write render as before.
  EXPECT_EQ(Template(test::chain("1", " + 1", 200)).render(context()), "201");
  EXPECT_EQ(Template(test::chain("x", "|string", 200)).render(context()), "x");
}

TEST(JinjaHostile, DeepEvaluationIsStoppedBeforeTheStackRunsOut) {
  // Macro recursion with a tall expression in each frame: 100 calls deep, each 90 levels.
  const std::string t = test::hostile_templates(20000, kBig).at("macro_tall_frames");
  // (Under ASan, whose frames are bigger, the stack may run short first.)
  const std::string e = error_of(t);
  EXPECT_TRUE(e.find("deeper than 2000 levels") != std::string::npos ||
              e.find("too deep for this thread's stack") != std::string::npos)
      << e;
  // Without a depth limit the stack itself is the limit: on the main thread's 8 MiB,
  RenderLimits unlimited = test_limits();
  unlimited.max_depth = 1'000'000;
  unlimited.max_call_depth = 1'000'000;
  EXPECT_NE(error_of(t, unlimited).find("too deep for this thread's stack"), std::string::npos);
  // and on a thread with a small one.
  struct Run {
    std::string src, error;
  } run{t, ""};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512u << 10);
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, &attr,
                [](void* p) -> void* {
                  auto* r = static_cast<Run*>(p);
                  RenderLimits l = test_limits();
                  l.max_depth = 1'000'000;
                  l.max_call_depth = 1'000'000;
                  r->error = error_of(r->src, l);
                  return nullptr;
                },
                &run),
            0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(run.error.find("too deep for this thread's stack"), std::string::npos) << run.error;
}

TEST(JinjaHostile, DeepValuesAreAnError) {
  const std::string t = test::hostile_templates(20000, kBig).at("deep_value");
  EXPECT_NE(error_of(t).find("a value nests deeper than 256 levels"), std::string::npos);
}

TEST(JinjaHostile, AmplificationIsStoppedBeforeBuilding) {
  const bool peak_measured = reset_peak_rss();
  for (const auto& [name, t] : test::hostile_templates(20000, kBig)) {
    if (name.rfind("amp_", 0) != 0) continue;
    SCOPED_TRACE(name);
    const std::string e = error_of(t);
    EXPECT_TRUE(e.find("more than the limit of") != std::string::npos ||
                e.find("of values in one render") != std::string::npos ||
                e.find("ran too long") != std::string::npos)
        << e;
  }
  // Each value was refused before it was built: nothing near a gigabyte was ever held.
  if (peak_measured) {
    EXPECT_LT(peak_rss_mib(), 1024u);
  }
}

TEST(JinjaHostile, TheReportedAmplificationsFailUnderTheDefaultLimits) {
  const RenderLimits defaults;
  const bool peak_measured = reset_peak_rss();
  // Peaked at 3.1 GB: every character became a Value.
  EXPECT_NE(error_of("{{ ('x' * 60000000)|list|length }}", defaults)
                .find("a string's characters: a value of"),
            std::string::npos);
  // Was accepted: 30 copies of a 60 MB string.
  EXPECT_NE(error_of("{% set s = 'x' * 60000000 %}{{ ([s] * 30)|length }}", defaults)
                .find("more than the limit of 67108864"),
            std::string::npos);
  EXPECT_NE(error_of("{{ ('x' * 60000000)|replace('x', 'yy')|length }}", defaults)
                .find("replace(): a value of"),
            std::string::npos);
  if (peak_measured) {
    EXPECT_LT(peak_rss_mib(), 1024u);
  }
}

TEST(JinjaHostile, PublishedTemplatesRenderMegabytesOfConversation) {
  // Every published template renders a conversation of ~8 MiB (its reference conversation,
  // each message padded; a request body's most) under the default limits, even with half the
  // default budget of bytes created.
  using nlohmann::json;
  const auto dir = test::source_dir() / "tests/data/chat_templates";
  const json e = json::parse(test::slurp(dir / "expected.json"));
  std::set<std::string> done;
  for (const json& c : e["cases"]) {
    const std::string name = c["template"];
    if (!c.contains("expected") || done.count(name)) continue;
    const json& conv = e["conversations"][c["conversation"].get<std::string>()];
    if (conv.size() < 2) continue;
    done.insert(name);
    std::vector<ChatMessage> messages;
    const size_t each = (8u << 20) / conv.size();
    for (const json& m : conv)
      messages.push_back({m["role"], m["content"].get<std::string>() + std::string(each, 'w')});
    // As ChatTemplate renders them, with half the default budget: room to spare.
    RenderLimits half;
    half.max_total_bytes /= 2;
    ordered_json ctx = {{"messages", ordered_json::array()},
                        {"add_generation_prompt", c["add_generation_prompt"]},
                        {"bos_token", c["bos_token"]},
                        {"eos_token", c["eos_token"]},
                        {"tools", nullptr},
                        {"documents", nullptr}};
    for (const ChatMessage& m : messages)
      ctx["messages"].push_back({{"role", m.role}, {"content", m.content}});
    std::string out;
    ASSERT_NO_THROW(out = Template(test::slurp(dir / (name + ".jinja"))).render(ctx, half)) << name;
    EXPECT_GT(out.size(), 4u << 20) << name;  // some leave the system message out
  }
  EXPECT_GE(done.size(), 12u);
}

}  // namespace
}  // namespace sandwich::engine::jinja
