// sandwichd serves a chat with the template a GGUF carries (tokenizer.chat_template), or with a
// --chat-template file, logs which at start-up, and answers a template's raise_exception with a
// 400 naming it while serving goes on.
#include <fstream>

#include <gtest/gtest.h>

#include "engine/formats/dummy_model.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

// Upper-cased contents make the template's hand visible in the tokens.
constexpr const char* kModelTemplate =
    "{% for m in messages %}{% if m.role == 'system' %}"
    "{{ raise_exception('this model takes no system message') }}{% endif %}"
    "<{{ m.role }}>{{ m.content | upper }}</{{ m.role }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

// A tiny Llama with dummy weights and a synthetic vocabulary, carrying kModelTemplate.
std::filesystem::path write_model(const TempDir& dir) {
  std::ofstream(dir / "config.json")
      << nlohmann::json{{"model_type", "llama"},    {"hidden_size", 64},
                        {"num_hidden_layers", 1},   {"num_attention_heads", 4},
                        {"num_key_value_heads", 4}, {"intermediate_size", 128},
                        {"vocab_size", 512},        {"max_position_embeddings", 256}}
             .dump();
  const engine::ModelConfig c = engine::read_model_config(dir / "config.json");
  engine::Vocab v = engine::default_dummy_vocab(c);
  v.chat_template = kModelTemplate;
  engine::write_dummy_gguf(c, engine::WeightDType::F32, v, 0, dir / "m.gguf");
  return dir / "m.gguf";
}

// The ids the chat is served with: /tokenize of its messages.
std::vector<int> chat_ids(Client& c, const json& messages) {
  auto r = c.post("/tokenize", {{"messages", messages}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.j()["tokens"].get<std::vector<int>>();
}
std::vector<int> text_ids(Client& c, const std::string& text) {
  auto r = c.post("/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.j()["tokens"].get<std::vector<int>>();
}

TEST(ChatTemplateServing, TheModelsTemplateIsUsedAndItsErrorsAre400s) {
  TempDir dir;
  const auto model = write_model(dir);
  Daemon d("--model " + model.string() + " --served-model-name t");
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find("chat template: the model's, "), std::string::npos) << d.log();
  Client c(d.port());
  const json messages = {{{"role", "user"}, {"content", "hi there"}},
                         {{"role", "assistant"}, {"content", "hello"}},
                         {{"role", "user"}, {"content", "bye"}}};
  const std::vector<int> ids = chat_ids(c, messages);
  EXPECT_EQ(ids, text_ids(c,
                          "<user>HI THERE</user>\n<assistant>HELLO</assistant>\n<user>BYE</user>"
                          "\n<assistant>"));
  auto r = c.post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j()["usage"]["prompt_tokens"], ids.size());

  const json with_system = {{{"role", "system"}, {"content", "be brief"}},
                            {{"role", "user"}, {"content", "hi"}}};
  auto bad = c.post("/v1/chat/completions", {{"messages", with_system}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.j()["error"]["type"], "invalid_request_error");
  EXPECT_EQ(bad.j()["error"]["message"], "chat template error: this model takes no system message");
  EXPECT_EQ(c.post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}}).status,
            200);
}

TEST(ChatTemplateServing, AChatTemplateFileOverridesTheModels) {
  TempDir dir;
  const auto model = write_model(dir);
  std::ofstream(dir / "mine.jinja")
      << "{%- for m in messages %}\n  [{{ m.role }}] {{ m.content }}\n{% endfor -%}\n";
  Daemon d("--model " + model.string() + " --chat-template " + (dir / "mine.jinja").string());
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find("chat template: file " + (dir / "mine.jinja").string()), std::string::npos)
      << d.log();
  Client c(d.port());
  const json messages = {{{"role", "system"}, {"content", "s"}},
                         {{"role", "user"}, {"content", "u"}}};
  EXPECT_EQ(chat_ids(c, messages), text_ids(c, "  [system] s\n  [user] u\n"));
}

}  // namespace
}  // namespace sandwich::test
