// The published chat templates of Llama-2, Llama-3 and 3.1, Mistral, Zephyr, ChatML/Qwen2,
// Gemma and Phi-3 (tests/data/chat_templates/) render byte for byte what their reference
// implementation renders (expected.json: rendered by @huggingface/jinja, as transformers'
// apply_chat_template would), errors from raise_exception included.
#include <gtest/gtest.h>

#include "engine/text/chat_template.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using nlohmann::json;

std::filesystem::path templates_dir() {
  return test::source_dir() / "tests/data/chat_templates";
}

TEST(PublishedChatTemplates, RenderAsTheirReference) {
  const json e = json::parse(test::slurp(templates_dir() / "expected.json"));
  int rendered = 0, raised = 0;
  for (const json& c : e["cases"]) {
    const std::string name = c["template"];
    const std::string source = test::slurp(templates_dir() / (name + ".jinja"));
    ASSERT_FALSE(source.empty()) << name;
    std::vector<ChatMessage> messages;
    for (const json& m : e["conversations"][c["conversation"].get<std::string>()])
      messages.push_back({m["role"], m["content"]});
    const ChatTemplate t(source, c["bos_token"], c["eos_token"]);
    const std::string what = name + " / " + c["conversation"].get<std::string>() +
                             (c["add_generation_prompt"] ? " + generation prompt" : "");
    if (c.contains("expected")) {
      EXPECT_EQ(t.render(messages, c["add_generation_prompt"]), c["expected"].get<std::string>())
          << what;
      ++rendered;
    } else {
      try {
        t.render(messages, c["add_generation_prompt"]);
        ADD_FAILURE() << what << ": no error";
      } catch (const jinja::Error& err) {
        EXPECT_EQ(err.what(), c["error"].get<std::string>()) << what;
      }
      ++raised;
    }
  }
  EXPECT_GT(rendered, 80);
  EXPECT_GT(raised, 10);
}

// The built-in templates render as the published ones wherever these render: Llama-3 as Meta's
// (with the tokenizer's BOS), ChatML as OpenHermes', Llama-2 as Meta's (which raises where the
// built-in one is lenient: roles that do not alternate).
TEST(PublishedChatTemplates, BuiltInsAgreeWithThePublishedOnes) {
  const json e = json::parse(test::slurp(templates_dir() / "expected.json"));
  for (const json& c : e["cases"]) {
    const std::string name = c["template"];
    if ((name != "llama3" && name != "chatml" && name != "llama2") || !c.contains("expected"))
      continue;
    std::vector<ChatMessage> messages;
    for (const json& m : e["conversations"][c["conversation"].get<std::string>()])
      messages.push_back({m["role"], m["content"]});
    const ChatFormat f = name == "llama3"   ? ChatFormat::Llama3
                         : name == "llama2" ? ChatFormat::Llama2
                                            : ChatFormat::ChatML;
    EXPECT_EQ(render_chat(f, messages, c["add_generation_prompt"], c["bos_token"], c["eos_token"]),
              c["expected"].get<std::string>())
        << name << " / " << c["conversation"];
  }
}

}  // namespace
}  // namespace sandwich::engine
