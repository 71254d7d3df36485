// Chat templates as code: the input is a template's source alone, parsed and rendered with a
// fixed, realistic context (a conversation with a system prompt, tool calls and their results,
// the tools offered, BOS/EOS, the generation prompt). A template comes with a model file from
// anywhere: a Jinja error is a fine outcome; a crash, a hang or a big allocation is not. The
// seeds include hostile ones (generated_seeds.h: overflow, 20,000-term chains, deep nesting,
// amplification), which the render limits below must stop well inside the fuzzer's
// (-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20).
#include <string>

#include "engine/text/jinja.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich::engine::jinja;
  using nlohmann::ordered_json;
  static const ordered_json ctx = [] {
    const ordered_json weather = {
        {"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"description", "The weather in a city"},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
            {"required", {"city"}}}}}}};
    ordered_json c = {{"bos_token", "<s>"},
                      {"eos_token", "</s>"},
                      {"add_generation_prompt", true},
                      {"tools", {weather}},
                      {"documents", nullptr}};
    c["messages"] = {
        {{"role", "system"}, {"content", "You are a helpful assistant."}},
        {{"role", "user"}, {"content", "What's the weather in Paris?"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"temp\": 21}"}},
        {{"role", "assistant"},
         {"content",
          "It is 21 \xc2\xb0"
          "C in Paris."}},
        {{"role", "user"}, {"content", "Thanks! \xe2\x9c\xa8 And tomorrow?"}}};
    return c;
  }();
  // Small limits: a template that loops, recurses or grows is stopped, fast and small.
  RenderLimits limits;
  limits.max_steps = 20000;
  limits.max_output = 1 << 20;
  limits.max_call_depth = 20;
  limits.max_total_bytes = 64u << 20;
  try {
    const Template t(sandwich::fuzz::as_text(data, size));
    (void)t.render(ctx, limits);
  } catch (const Error&) {
  }
  return 0;
}
