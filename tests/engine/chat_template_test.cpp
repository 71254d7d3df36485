// ChatTemplate: what a template sees (messages, the special tokens, add_generation_prompt, no
// tools), and which template a tokenizer_config.json's "chat_template" holds.
#include "engine/text/chat_template.h"

#include <gtest/gtest.h>

namespace sandwich::engine {
namespace {

TEST(ChatTemplate, SeesTheMessagesTheSpecialTokensAndNoTools) {
  const ChatTemplate t(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}"
      "{{ eos_token }}{{ add_generation_prompt }}{{ tools is none }}{{ date_string is defined }}",
      "<s>", "</s>");
  EXPECT_EQ(t.render({{"system", "a"}, {"user", "b"}}, true),
            "<s>system:a;user:b;</s>TrueTrueFalse");
  EXPECT_EQ(t.render({}, false), "<s></s>FalseTrueFalse");
  EXPECT_THROW(ChatTemplate("{% if %}", "", ""), jinja::Error);
}

TEST(ChatTemplate, TheConfigsTemplateIsAStringOrTheDefaultOfAList) {
  using nlohmann::json;
  EXPECT_EQ(chat_template_of_config(json("{{ x }}")), "{{ x }}");
  EXPECT_EQ(chat_template_of_config(json::parse(
                R"([{"name":"tool_use","template":"T"},{"name":"default","template":"D"}])")),
            "D");
  EXPECT_EQ(chat_template_of_config(json::parse(R"([{"name":"tool_use","template":"T"}])")), "");
  EXPECT_EQ(chat_template_of_config(json::parse(R"([1, {"name":2}, {"name":"default"}])")), "");
  EXPECT_EQ(chat_template_of_config(json(nullptr)), "");
}

}  // namespace
}  // namespace sandwich::engine
