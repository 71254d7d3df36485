// The published templates with tool support (Llama-3.1, Qwen2.5, Mistral v3) given tools, an
// assistant turn that called one and the tool's answer, as the server passes them (HF's shape:
// arguments as an object): each puts the tools, the call and the result where its model expects
// them. Also the extra template variables (chat_template_kwargs) and their reserved names.
#include <gtest/gtest.h>

#include "engine/text/chat_template.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using ojson = nlohmann::ordered_json;

std::string render(const std::string& name, const ojson& messages, const ojson& tools,
                   const std::string& bos, const std::string& eos) {
  const ChatTemplate t(
      test::slurp(test::source_dir() / "tests/data/chat_templates" / (name + ".jinja")), bos, eos);
  ChatRenderOptions o;
  o.tools = tools;
  return t.render(messages, o);
}

const ojson kTools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "description": "The weather in a city", "parameters": {"type": "object",
  "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

ojson conversation(const std::string& call_id) {
  return ojson::parse(R"([{"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": ")" +
                      call_id + R"(", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": ")" +
                      call_id + R"(", "content": "sunny, 21 C"}])");
}

// Each of `parts` in `text`, in this order.
void expect_in_order(const std::string& text, const std::vector<std::string>& parts) {
  size_t pos = 0;
  for (const std::string& p : parts) {
    const size_t at = text.find(p, pos);
    ASSERT_NE(at, std::string::npos) << "missing, or out of order: " << p << "\nin:\n" << text;
    pos = at + p.size();
  }
}

TEST(ChatTemplateTools, Llama31) {
  const std::string out =
      render("llama3.1", conversation("call_1"), kTools, "<|begin_of_text|>", "<|eot_id|>");
  expect_in_order(
      out, {"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n",
            "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions",
            "\"name\": \"get_weather\"", "Weather in Paris?<|eot_id|>",
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
            "\"parameters\": {\"city\": \"Paris\"}}<|eot_id|>",
            "<|start_header_id|>ipython<|end_header_id|>\n\n", "sunny, 21 C",
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"});
  EXPECT_TRUE(out.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"));
}

TEST(ChatTemplateTools, Qwen25) {
  const std::string out = render("qwen2.5", conversation("call_1"), kTools, "", "<|im_end|>");
  EXPECT_EQ(out,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
            "query.\n\nYou are provided with function signatures within <tools></tools> XML "
            "tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            "\"description\": \"The weather in a city\", \"parameters\": {\"type\": "
            "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
            "\"required\": [\"city\"]}}}"
            "\n</tools>\n\nFor each function call, return a json object with function name "
            "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
            "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
            "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
  // Without tools, the plain ChatML system prompt.
  EXPECT_TRUE(render("qwen2.5", ojson::parse(R"([{"role": "user", "content": "Hi"}])"), nullptr, "",
                     "<|im_end|>")
                  .starts_with("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You "
                               "are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi"));
}

TEST(ChatTemplateTools, MistralV3) {
  // Its tools go before the last user turn, so the conversation ends with one.
  ojson messages = conversation("abc123XYZ");
  messages.push_back({{"role", "assistant"}, {"content", "It is sunny."}});
  messages.push_back({{"role", "user"}, {"content", "And in Rome?"}});
  const std::string out = render("mistral-v3", messages, kTools, "<s>", "</s>");
  expect_in_order(out, {"<s>[INST] Weather in Paris?[/INST]",
                        "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                        "\"Paris\"}, \"id\": \"abc123XYZ\"}]</s>",
                        "[TOOL_RESULTS] {\"content\": sunny, 21 C, \"call_id\": "
                        "\"abc123XYZ\"}[/TOOL_RESULTS] It is sunny.</s>",
                        "[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": "
                        "\"get_weather\"",
                        "[/AVAILABLE_TOOLS][INST] And in Rome?[/INST]"});
  // Its own rule: ids of 9 characters (why the server makes such ids for Mistral).
  EXPECT_THROW(render("mistral-v3", conversation("call_1"), kTools, "<s>", "</s>"), jinja::Error);
}

TEST(ChatTemplateTools, ExtraVariablesAreSeenButCannotReplaceTheServers) {
  const ChatTemplate t("{{ enable_thinking }} {{ messages | length }} {{ tools is none }}", "", "");
  ChatRenderOptions o;
  o.extra = ojson{{"enable_thinking", false}};
  EXPECT_EQ(t.render(ojson::array(), o), "False 0 True");
  for (const char* k : kReservedChatTemplateKeys) {
    o.extra = ojson{{k, 1}};
    EXPECT_THROW(t.render(ojson::array(), o), std::invalid_argument) << k;
  }
  o.extra = ojson::array();
  EXPECT_THROW(t.render(ojson::array(), o), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::engine
