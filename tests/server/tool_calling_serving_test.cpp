// Tool calling end to end: sandwichd serving a random-weight Llama with the real Llama-3
// vocabulary under the published templates of Llama-3.1, Qwen2.5 and Mistral v3 picks each one's
// tool-call format, renders the tools into the prompt, and answers the official OpenAI Node SDK
// (tests/server/openai_client/openai_tools_test.mjs): calls whole and streamed, tool_choice
// required and named, a round trip with a tool message.
#include <fstream>

#include <gtest/gtest.h>

#include "command.h"
#include "engine/formats/dummy_model.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

// A one-layer Llama of hidden size 64 with the 128,256-token Llama-3 vocabulary, written once.
const std::filesystem::path& model_file() {
  static TempDir dir;
  static const std::filesystem::path file = [] {
    std::ofstream(dir / "config.json") << json{
        {"model_type", "llama"},    {"hidden_size", 64},
        {"num_hidden_layers", 1},   {"num_attention_heads", 4},
        {"num_key_value_heads", 4}, {"intermediate_size", 128},
        {"vocab_size", 128256},     {"max_position_embeddings", 4096},
        {"rope_theta", 500000.0}}.dump();
    const engine::ModelConfig c = engine::read_model_config(dir / "config.json");
    const engine::Vocab v =
        engine::vocab_from_tokenizer_file(data_dir() / "tokenizers/llama3/tokenizer.model");
    engine::write_dummy_gguf(c, engine::WeightDType::BF16, v, 3, dir / "m.gguf");
    return dir / "m.gguf";
  }();
  return file;
}

struct Served {
  const char* chat_template;
  const char* format;  // the tool-call parser sandwichd picks from it
};

class ToolCallingServing : public ::testing::TestWithParam<Served> {};

TEST_P(ToolCallingServing, TheTemplatesFormatIsUsedEndToEnd) {
  SANDWICH_REQUIRE_DATA();
  const Served s = GetParam();
  const auto template_file =
      source_dir() / "tests/data/chat_templates" / (std::string(s.chat_template) + ".jinja");
  Daemon d("--model " + model_file().string() + " --chat-template " + template_file.string() +
           " --served-model-name t --threads 1");
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find(std::string("tool calls: ") + s.format + " (auto: "), std::string::npos)
      << d.log();

  // The tools reach the prompt, where the template puts them.
  Client c(d.port());
  const json tool = {{"type", "function"},
                     {"function",
                      {{"name", "get_weather"},
                       {"description", "The weather in a city"},
                       {"parameters", {{"type", "object"}, {"properties", json::object()}}}}}};
  const json messages = {{{"role", "user"}, {"content", "Weather?"}}};
  auto r = c.post("/tokenize", {{"messages", messages}, {"tools", {tool}}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto text = c.post("/detokenize", {{"tokens", r.j()["tokens"]}});
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_NE(text.j()["prompt"].get<std::string>().find("get_weather"), std::string::npos)
      << text.body;

  const auto client_dir = source_dir() / "tests/server/openai_client";
  if (std::system("command -v node >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "node is not installed (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(client_dir / "node_modules/openai"))
    GTEST_SKIP() << "the openai npm package is missing: run scripts/setup.sh (npm ci in "
                 << client_dir << ")";
  const CommandResult out =
      run_command("node " + (client_dir / "openai_tools_test.mjs").string() +
                  " http://127.0.0.1:" + std::to_string(d.port()) + "/v1 " + s.format);
  EXPECT_EQ(out.code, 0) << out.out << out.err << d.log();
  EXPECT_NE(out.out.find("openai tools: all checks passed"), std::string::npos)
      << out.out << out.err;
}

INSTANTIATE_TEST_SUITE_P(PublishedTemplates, ToolCallingServing,
                         ::testing::Values(Served{"llama3.1", "llama3_json"},
                                           Served{"qwen2.5", "hermes"},
                                           Served{"mistral-v3", "mistral"}),
                         [](const auto& info) { return std::string(info.param.format); });

// --tool-call-parser overrides the guess, and a wrong name is refused in one line; vLLM's
// --enable-auto-tool-choice and llama-server's --jinja are accepted (what they ask for is the
// default here).
TEST(ToolCallParserFlag, OverridesTheTemplatesFormatAndRejectsUnknownNames) {
  SANDWICH_REQUIRE_DATA();
  const auto qwen = source_dir() / "tests/data/chat_templates/qwen2.5.jinja";
  Daemon d("--model " + model_file().string() + " --chat-template " + qwen.string() +
           " --tool-call-parser none --threads 1 --enable-auto-tool-choice --jinja");
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find("tool calls: none (--tool-call-parser)"), std::string::npos) << d.log();
  Client c(d.port());
  const json tools = {{{"type", "function"}, {"function", {{"name", "f"}}}}};
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  auto r = c.post("/v1/chat/completions", {{"messages", messages}, {"tools", tools}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.j()["error"]["param"], "tool_choice") << r.body;
  r = c.post(
      "/v1/chat/completions",
      {{"messages", messages}, {"tools", tools}, {"tool_choice", "none"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.body;

  expect_one_line_error(run_command((bin_dir() / "sandwichd").string() + " --model " +
                                    model_file().string() + " --tool-call-parser qwen"),
                        "--tool-call-parser must be auto, llama3_json, hermes, mistral or none, "
                        "got 'qwen'");
}

}  // namespace
}  // namespace sandwich::test
