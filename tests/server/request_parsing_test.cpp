// Request bodies to validated requests: defaults, every accepted shape, and the error (status,
// field, message) a client gets for what it got wrong, without a model or a scheduler.
#include "request_parsing.h"

#include <fstream>
#include <optional>

#include <gtest/gtest.h>

#include "api_error.h"
#include "test_data.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;
using test::TempDir;

class RequestParsing : public ::testing::Test {
 protected:
  RequestParsing()
      : tok_(engine::make_tokenizer(
            engine::make_synthetic_vocab(engine::Vocab::Kind::SentencePiece, 300))),
        chatml_(engine::builtin_chat_template(engine::ChatFormat::ChatML), "<s>", "</s>") {}

  ParseContext ctx() const {
    return {*tok_,
            template_ ? *template_ : chatml_,
            /*vocab_size=*/300,
            /*max_model_len=*/256,
            /*max_waiting=*/10,
            /*max_n=*/4,
            SIZE_MAX,
            0,
            tool_format_};
  }
  // A body that must parse: its error, if any, fails the test with the message.
  GenerateRequest parse(const json& body, ApiKind kind = ApiKind::Completion) const {
    try {
      return parse_generate_request(body, kind, ctx());
    } catch (const ApiError& e) {
      ADD_FAILURE() << body.dump() << ": " << e.message;
      throw;
    }
  }
  // The error the body gets; a failure when it gets none.
  ApiError error_of(const json& body, ApiKind kind = ApiKind::Completion) const {
    try {
      parse_generate_request(body, kind, ctx());
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << body.dump();
    return {};
  }
  void expect_bad(const json& body, const std::string& param, const std::string& message,
                  ApiKind kind = ApiKind::Completion) const {
    const ApiError e = error_of(body, kind);
    EXPECT_EQ(e.status, 400) << body.dump();
    EXPECT_EQ(e.type, "invalid_request_error") << body.dump();
    EXPECT_EQ(e.param, param) << body.dump();
    EXPECT_EQ(e.message, message) << body.dump();
  }
  static json chat(json extra = json::object()) {
    extra["messages"] = {{{"role", "user"}, {"content", "Hi"}}};
    return extra;
  }

  std::unique_ptr<engine::Tokenizer> tok_;
  engine::ChatTemplate chatml_;
  ToolCallFormat tool_format_ = ToolCallFormat::Hermes;
  std::optional<engine::ChatTemplate> template_;  // instead of ChatML
};

const json kWeatherTool = {{"type", "function"},
                           {"function",
                            {{"name", "get_weather"},
                             {"description", "The weather in a city"},
                             {"parameters",
                              {{"type", "object"},
                               {"properties", {{"city", {{"type", "string"}}}}},
                               {"required", {"city"}}}}}}};
const json kTimeTool = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
const json kNamedWeather = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};

TEST_F(RequestParsing, CompletionDefaults) {
  const GenerateRequest r = parse({{"prompt", "hello"}});
  EXPECT_EQ(r.kind, ApiKind::Completion);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0], tok_->encode("hello", true));
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, -1);
  EXPECT_FALSE(r.sampling.seed);
  EXPECT_TRUE(r.sampling.logit_bias.empty());
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.ignore_eos);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_EQ(r.sequences(), 1u);
}

TEST_F(RequestParsing, NullFieldsKeepTheirDefaults) {
  const GenerateRequest r =
      parse({{"prompt", "hello"}, {"temperature", nullptr}, {"n", nullptr}, {"stop", nullptr}});
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.n, 1);
  EXPECT_TRUE(r.stop.empty());
}

TEST_F(RequestParsing, EverySamplingField) {
  const GenerateRequest r = parse({{"prompt", "hello"},
                                   {"temperature", 0.5},
                                   {"top_p", 0.9},
                                   {"top_k", 5},
                                   {"min_p", 0.1},
                                   {"presence_penalty", -1},
                                   {"frequency_penalty", 2},
                                   {"repetition_penalty", 1.3},
                                   {"seed", -3},
                                   {"logit_bias", {{"7", 100}, {"299", -100}}},
                                   {"max_tokens", 8},
                                   {"ignore_eos", true},
                                   {"stop", {"a", "bc"}},
                                   {"user", "me"},
                                   {"n", 3}});
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, 2.0f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.3f);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(-3));
  const std::vector<std::pair<int32_t, float>> bias{{299, -100.0f}, {7, 100.0f}};  // key order
  EXPECT_EQ(r.sampling.logit_bias, bias);
  EXPECT_EQ(r.max_tokens, 8);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.sequences(), 3u);
  EXPECT_EQ(parse({{"prompt", "x"}, {"stop", "end"}}).stop, std::vector<std::string>{"end"});
}

TEST_F(RequestParsing, PromptShapes) {
  const auto hello = tok_->encode("hello", true);
  EXPECT_EQ(parse({{"prompt", {5, 6, 7}}}).prompts, (std::vector<std::vector<int32_t>>{{5, 6, 7}}));
  const GenerateRequest r = parse({{"prompt", json::array({"hello", {5, 6}})}, {"n", 2}});
  EXPECT_EQ(r.prompts, (std::vector<std::vector<int32_t>>{hello, {5, 6}}));
  EXPECT_EQ(r.sequences(), 4u);
}

TEST_F(RequestParsing, BadPrompts) {
  expect_bad(json::object(), "prompt", "'prompt' is required");
  expect_bad({{"prompt", nullptr}}, "prompt", "'prompt' is required");
  const std::string shape =
      "'prompt' must be a non-empty string, a list of token ids, or a list of either";
  expect_bad({{"prompt", json::array()}}, "prompt", shape);
  expect_bad({{"prompt", 5}}, "prompt", shape);
  expect_bad({{"prompt", json::array({"a", 5})}}, "prompt",
             "'prompt' must be a string, a list of token ids, or a list of either");
  expect_bad({{"prompt", {1, 300}}}, "prompt", "'prompt' token id 300 is outside the vocabulary");
  expect_bad({{"prompt", {1, -1}}}, "prompt", "'prompt' token id -1 is outside the vocabulary");
  expect_bad({{"prompt", {1, 1.5}}}, "prompt", "'prompt' token ids must be integers");
  expect_bad({{"prompt", json::array({json::array({1}), json::array()})}}, "prompt",
             "a prompt is empty (no tokens)");
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back({1});
  expect_bad({{"prompt", many}}, "prompt", "at most 64 prompts per request");
}

TEST_F(RequestParsing, FieldsOfTheWrongTypeOrOutOfRange) {
  expect_bad({{"prompt", "x"}, {"temperature", "hot"}}, "temperature",
             "'temperature' must be a number, not string");
  expect_bad({{"prompt", "x"}, {"temperature", 200}}, "temperature",
             "'temperature' must be between 0 and 100, got 200");
  expect_bad({{"prompt", "x"}, {"top_p", 0}}, "top_p",
             "'top_p' must be between 1e-09 and 1, got 0");
  expect_bad({{"prompt", "x"}, {"top_k", 1.5}}, "top_k", "'top_k' must be an integer, not number");
  expect_bad({{"prompt", "x"}, {"n", 5}}, "n", "'n' must be between 1 and 4, got 5");
  expect_bad({{"prompt", "x"}, {"max_tokens", 257}}, "max_tokens",
             "'max_tokens' must be between 1 and 256, got 257");
  expect_bad({{"prompt", "x"}, {"max_tokens", 18446744073709551615ull}}, "max_tokens",
             "'max_tokens' must be between 1 and 256, got 18446744073709551615");
  expect_bad({{"prompt", "x"}, {"stream", 1}}, "stream", "'stream' must be a boolean, not number");
  expect_bad({{"prompt", "x"}, {"user", 5}}, "user", "'user' must be a string, not number");
  expect_bad({{"prompt", "x"}, {"seed", "a"}}, "seed", "'seed' must be an integer, not string");
  expect_bad({{"prompt", "x"}, {"stop", 5}}, "stop",
             "'stop' must be a string or a list of strings");
  expect_bad({{"prompt", "x"}, {"stop", {5}}}, "stop",
             "'stop' must be a string or a list of strings");
  expect_bad({{"prompt", "x"}, {"stop", std::vector<std::string>(17, "s")}}, "stop",
             "at most 16 stop strings");
}

TEST_F(RequestParsing, LogitBias) {
  expect_bad({{"prompt", "x"}, {"logit_bias", json::array()}}, "logit_bias",
             "'logit_bias' must be an object mapping token ids to biases");
  expect_bad({{"prompt", "x"}, {"logit_bias", {{"a", 1}}}}, "logit_bias",
             "'logit_bias' key 'a' is not a token id of this model (0..299)");
  expect_bad({{"prompt", "x"}, {"logit_bias", {{"300", 1}}}}, "logit_bias",
             "'logit_bias' key '300' is not a token id of this model (0..299)");
  expect_bad({{"prompt", "x"}, {"logit_bias", {{"1", "a"}}}}, "logit_bias",
             "'logit_bias' values must be numbers");
  expect_bad({{"prompt", "x"}, {"logit_bias", {{"1", 101}}}}, "logit_bias",
             "'logit_bias' values must be between -100 and 100");
}

TEST_F(RequestParsing, StreamOptions) {
  EXPECT_TRUE(parse({{"prompt", "x"}, {"stream", true}}).stream);
  EXPECT_TRUE(
      parse({{"prompt", "x"}, {"stream", true}, {"stream_options", {{"include_usage", true}}}})
          .include_usage);
  EXPECT_FALSE(
      parse({{"prompt", "x"}, {"stream", true}, {"stream_options", json::object()}}).include_usage);
  expect_bad({{"prompt", "x"}, {"stream_options", json::object()}}, "stream_options",
             "'stream_options' is only allowed when 'stream' is true");
  expect_bad({{"prompt", "x"}, {"stream", true}, {"stream_options", 1}}, "stream_options",
             "'stream_options' must be an object");
  expect_bad({{"prompt", "x"}, {"stream", true}, {"stream_options", {{"include_usage", "y"}}}},
             "include_usage", "'include_usage' must be a boolean, not string");
}

TEST_F(RequestParsing, Logprobs) {
  EXPECT_EQ(parse({{"prompt", "x"}, {"logprobs", 0}}).logprobs, 0);
  EXPECT_EQ(parse({{"prompt", "x"}, {"logprobs", 20}}).logprobs, 20);
  expect_bad({{"prompt", "x"}, {"logprobs", 21}}, "logprobs",
             "'logprobs' must be between 0 and 20, got 21");
  expect_bad({{"prompt", "x"}, {"logprobs", true}}, "logprobs",
             "'logprobs' must be an integer, not boolean");
  EXPECT_EQ(parse(chat({{"logprobs", true}}), ApiKind::Chat).logprobs, 0);
  EXPECT_EQ(parse(chat({{"logprobs", true}, {"top_logprobs", 3}}), ApiKind::Chat).logprobs, 3);
  EXPECT_EQ(parse(chat({{"logprobs", false}}), ApiKind::Chat).logprobs, -1);
  expect_bad(chat({{"top_logprobs", 2}}), "top_logprobs", "'top_logprobs' needs 'logprobs': true",
             ApiKind::Chat);
  expect_bad(chat({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs",
             "'top_logprobs' must be between 0 and 20, got 21", ApiKind::Chat);
}

TEST_F(RequestParsing, UnsupportedFeaturesAreRefused) {
  expect_bad({{"prompt", "x"}, {"echo", true}}, "echo", "'echo' is not supported by this server");
  expect_bad({{"prompt", "x"}, {"best_of", 2}}, "best_of",
             "'best_of' > 1 is not supported by this server; use 'n'");
  expect_bad({{"prompt", "x"}, {"suffix", "s"}}, "suffix",
             "'suffix' is not supported by this server");
  EXPECT_NO_THROW(parse({{"prompt", "x"}, {"echo", false}, {"best_of", 1}}));
  // Structured output is served (tests/server/structured_output_serving_test.cpp); what does
  // not compile, or a response_format of another type, is refused naming the field.
  EXPECT_FALSE(
      parse(chat({{"response_format", {{"type", "json_object"}}}}), ApiKind::Chat).grammar.empty());
  EXPECT_TRUE(
      parse(chat({{"response_format", {{"type", "text"}}}}), ApiKind::Chat).grammar.empty());
  expect_bad(chat({{"response_format", {{"type", "xml"}}}}), "response_format",
             "'response_format' type 'xml' is not one of text, json_object, json_schema",
             ApiKind::Chat);
  expect_bad(chat({{"response_format", "text"}}), "response_format",
             "'response_format' must be an object with a 'type'", ApiKind::Chat);
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, json>>{{"guided_json", {{"type", "object"}}},
                                                 {"guided_regex", "a+"},
                                                 {"guided_choice", {"a", "b"}},
                                                 {"guided_grammar", "root ::= \"a\""},
                                                 {"structured_outputs", {{"regex", "a+"}}},
                                                 {"grammar", "root ::= \"a\""},
                                                 {"json_schema", {{"type", "string"}}}}) {
    const GenerateRequest r = parse({{"prompt", "x"}, {k, v}});
    EXPECT_FALSE(r.grammar.empty()) << k;
    EXPECT_EQ(r.grammar_param.substr(0, k.size()), k);
    EXPECT_TRUE(parse({{"prompt", "x"}, {k, nullptr}}).grammar.empty()) << k;
  }
  expect_bad({{"prompt", "x"}, {"guided_json", {{"not", {}}}}}, "guided_json",
             "'guided_json': JSON Schema at /: 'not' is not supported");
}

// Served since issue 28 (tests/server/embeddings_test.cpp); refused before.
TEST_F(RequestParsing, PromptLogprobs) {
  EXPECT_EQ(parse({{"prompt", "x"}}).prompt_logprobs, -1);
  EXPECT_EQ(parse({{"prompt", "x"}, {"prompt_logprobs", 0}}).prompt_logprobs, 0);
  EXPECT_EQ(parse(chat({{"prompt_logprobs", 20}}), ApiKind::Chat).prompt_logprobs, 20);
  expect_bad({{"prompt", "x"}, {"prompt_logprobs", 21}}, "prompt_logprobs",
             "'prompt_logprobs' must be between 0 and 20, got 21");
  expect_bad({{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", true}}, "prompt_logprobs",
             "'prompt_logprobs' is not available when 'stream' is true");
}

TEST_F(RequestParsing, EmbeddingInputs) {
  auto embed = [&](const json& body) {
    Fields f(body);
    return parse_embedding_request(f, ctx(), 64);
  };
  auto inputs = [&](const json& input) { return embed({{"input", input}}).inputs; };
  auto error = [&](const json& body) {
    try {
      embed(body);
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << body.dump();
    return ApiError{};
  };
  EXPECT_EQ(inputs("hi").size(), 1u);
  EXPECT_EQ(inputs(json::array({"a", "b", "c"})).size(), 3u);
  EXPECT_EQ(inputs(json::array({5, 6, 7})), (std::vector<std::vector<int32_t>>{{5, 6, 7}}));
  EXPECT_EQ(inputs(json::array({json::array({5}), json::array({6, 7})})).size(), 2u);
  EXPECT_TRUE(embed({{"input", "a"}, {"encoding_format", "base64"}}).base64);
  // Completions' prompt errors, named as this endpoint names its field.
  const ApiError e = error({{"input", json::array({5, 300})}});
  EXPECT_EQ(e.param, "input");
  EXPECT_EQ(e.message, "'input' token id 300 is outside the vocabulary");
  // More than the queue holds (10 here).
  EXPECT_EQ(error({{"input", std::vector<std::string>(11, "a")}}).param, "input");
  EXPECT_EQ(error({{"input", std::vector<int32_t>(257, 5)}}).code, "context_length_exceeded");
  EXPECT_EQ(error({{"input", "a"}, {"dimensions", 63}}).param, "dimensions");
}

TEST_F(RequestParsing, BeamSearchAndStopStringsInTheOutputAreRefused) {
  for (const char* k : {"use_beam_search", "include_stop_str_in_output"}) {
    expect_bad({{"prompt", "x"}, {k, true}}, k,
               std::string("'") + k + "' is not supported by this server");
    EXPECT_NO_THROW(parse({{"prompt", "x"}, {k, false}}));
  }
}

TEST_F(RequestParsing, EveryFieldIsTypeChecked) {
  expect_bad(chat({{"user", 1}}), "user", "'user' must be a string, not number", ApiKind::Chat);
  expect_bad({{"prompt", "x"}, {"store", "yes"}}, "store", "'store' must be a boolean, not string");
  expect_bad({{"prompt", "x"}, {"metadata", 1}}, "metadata", "'metadata' must be an object");
  expect_bad({{"prompt", "x"}, {"service_tier", 1}}, "service_tier",
             "'service_tier' must be a string, not number");
  json named = chat();
  named["messages"][0]["name"] = 1;
  expect_bad(named, "messages", "message 'name' must be a string", ApiKind::Chat);
  named["messages"][0]["name"] = "bob";
  EXPECT_NO_THROW(parse(named, ApiKind::Chat));
}

TEST_F(RequestParsing, VllmExtras) {
  for (ApiKind kind : {ApiKind::Completion, ApiKind::Chat}) {
    json body = kind == ApiKind::Chat ? chat() : json{{"prompt", "x"}};
    const GenerateRequest d = parse(body, kind);
    EXPECT_EQ(d.min_tokens, 0);
    EXPECT_TRUE(d.stop_token_ids.empty());
    EXPECT_TRUE(d.skip_special_tokens);
    body["min_tokens"] = 3;
    body["stop_token_ids"] = {5, 7};
    body["skip_special_tokens"] = false;
    body["max_tokens"] = 8;
    const GenerateRequest r = parse(body, kind);
    EXPECT_EQ(r.min_tokens, 3);
    EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{5, 7}));
    EXPECT_FALSE(r.skip_special_tokens);
    body["min_tokens"] = 9;
    expect_bad(body, "min_tokens", "'min_tokens' (9) must not exceed 'max_tokens' (8)", kind);
    body["min_tokens"] = -1;
    expect_bad(body, "min_tokens", "'min_tokens' must be between 0 and 256, got -1", kind);
    body["min_tokens"] = 0;
    const std::string not_an_id = " is not a token id of this model (0..299)";
    for (const auto& [ids, shown] : std::vector<std::pair<json, std::string>>{
             {{300}, "300"}, {{-1}, "-1"}, {{1.5}, "1.5"}, {{"a"}, "\"a\""}, {{{1}}, "(a list)"}})
      expect_bad({{"prompt", "x"}, {"stop_token_ids", ids}}, "stop_token_ids",
                 "'stop_token_ids' entry " + shown + not_an_id);
    expect_bad({{"prompt", "x"}, {"stop_token_ids", 5}}, "stop_token_ids",
               "'stop_token_ids' must be a list of token ids");
    expect_bad({{"prompt", "x"}, {"skip_special_tokens", "no"}}, "skip_special_tokens",
               "'skip_special_tokens' must be a boolean, not string");
  }
}

TEST_F(RequestParsing, MaxCompletionTokensCountsOnBothEndpoints) {
  EXPECT_EQ(parse({{"prompt", "x"}, {"max_completion_tokens", 40}}).max_tokens, 40);
  EXPECT_EQ(parse(chat({{"max_completion_tokens", 40}}), ApiKind::Chat).max_tokens, 40);
  // The newer name wins, as in OpenAI's API.
  EXPECT_EQ(parse({{"prompt", "x"}, {"max_tokens", 5}, {"max_completion_tokens", 40}}).max_tokens,
            40);
  expect_bad({{"prompt", "x"}, {"max_completion_tokens", 0}}, "max_completion_tokens",
             "'max_completion_tokens' must be between 1 and 256, got 0");
}

TEST_F(RequestParsing, PromptAndCompletionMustFitTheContext) {
  const json ids = std::vector<int>(250, 5);
  EXPECT_NO_THROW(parse({{"prompt", ids}, {"max_tokens", 6}}));
  expect_bad({{"prompt", ids}, {"max_tokens", 7}}, "prompt",
             "This model's maximum context length is 256 tokens. However, you requested 257 tokens "
             "(250 in the messages, 7 in the completion). Please reduce the length of the messages "
             "or completion.");
  EXPECT_EQ(error_of({{"prompt", ids}, {"max_tokens", 7}}, ApiKind::Completion).code,
            "context_length_exceeded");
  // Chat leaves max_tokens to the context, but asks for one token at least.
  const GenerateRequest r = parse(chat(), ApiKind::Chat);
  EXPECT_EQ(r.max_tokens, -1);
  EXPECT_EQ(
      parse(chat({{"max_tokens", 9}, {"max_completion_tokens", 7}}), ApiKind::Chat).max_tokens, 7);
  expect_bad(chat({{"max_tokens", 0}, {"max_completion_tokens", 4}}), "max_tokens",
             "'max_tokens' must be between 1 and 256, got 0", ApiKind::Chat);
}

TEST_F(RequestParsing, ARequestLargerThanTheQueueIsRefused) {
  EXPECT_NO_THROW(parse({{"prompt", {"a", "b", "c", "d", "e"}}, {"n", 2}}));
  expect_bad({{"prompt", {"a", "b", "c"}}, {"n", 4}}, "n",
             "this request asks for 12 sequences (3 prompt(s) x n=4) but the server queues at "
             "most 10; send fewer prompts or a smaller 'n'");
  json many = json::array();
  for (int i = 0; i < 11; ++i) many.push_back("p");
  expect_bad({{"prompt", many}}, "prompt",
             "this request asks for 11 sequences (11 prompt(s) x n=1) but the server queues at "
             "most 10; send fewer prompts or a smaller 'n'");
}

TEST_F(RequestParsing, ChatMessagesAreRenderedWithTheTemplate) {
  const json body = {
      {"messages",
       {{{"role", "developer"}, {"content", "Be brief"}},
        {{"role", "assistant"}, {"content", nullptr}},
        {{"role", "user"},
         {"content", {{{"type", "text"}, {"text", "He"}}, {{"type", "text"}, {"text", "llo"}}}}}}}};
  const GenerateRequest r = parse(body, ApiKind::Chat);
  ASSERT_EQ(r.prompts.size(), 1u);
  const std::string bos(tok_->token_text(tok_->bos_id())), eos(tok_->token_text(tok_->eos_id()));
  const std::string text = engine::render_chat(
      engine::ChatFormat::ChatML, {{"system", "Be brief"}, {"assistant", ""}, {"user", "Hello"}},
      true, bos, eos);
  EXPECT_EQ(r.prompts[0], tok_->encode(text, false, true));
  EXPECT_EQ(parse_tokenize_request(body, ctx()), r.prompts[0]);
}

TEST_F(RequestParsing, BadChatMessages) {
  auto bad_messages = [&](const json& messages, const std::string& message) {
    expect_bad({{"messages", messages}}, "messages", message, ApiKind::Chat);
  };
  expect_bad(json::object(), "messages", "'messages' must be a non-empty list", ApiKind::Chat);
  bad_messages(json::array(), "'messages' must be a non-empty list");
  bad_messages({1}, "each message must be an object with 'role' and 'content'");
  bad_messages({{{"content", "x"}}}, "each message needs a string 'role'");
  bad_messages({{{"role", "function"}, {"content", "x"}}},
               "unsupported message role 'function' (system, user, assistant, tool)");
  bad_messages({{{"role", "user"}}}, "a 'user' message needs 'content'");
  bad_messages({{{"role", "user"}, {"content", {{{"type", "image"}}}}}},
               "only text content parts are supported");
  bad_messages({{{"role", "user"}, {"content", 5}}},
               "message 'content' must be a string or a list of text parts");
}

TEST_F(RequestParsing, ToolChoiceSetsHowTheOutputIsParsed) {
  using K = ToolCallParsing::Kind;
  const json tools = {kWeatherTool, kTimeTool};
  GenerateRequest r = parse(chat({{"tools", tools}}), ApiKind::Chat);
  EXPECT_EQ(r.tool_calls.kind, K::Format);  // auto, the default with tools
  EXPECT_EQ(r.tool_calls.format, ToolCallFormat::Hermes);
  EXPECT_TRUE(r.tool_calls.parallel);
  EXPECT_FALSE(r.tool_calls.short_ids);
  EXPECT_TRUE(r.grammar.empty());
  EXPECT_EQ(parse(chat({{"tools", tools}, {"tool_choice", "auto"}}), ApiKind::Chat).tool_calls.kind,
            K::Format);
  EXPECT_EQ(parse(chat({{"tools", tools}, {"tool_choice", "none"}}), ApiKind::Chat).tool_calls.kind,
            K::Off);
  EXPECT_EQ(parse(chat({{"tools", json::array()}}), ApiKind::Chat).tool_calls.kind, K::Off);
  EXPECT_EQ(parse(chat(), ApiKind::Chat).tool_calls.kind, K::Off);
  r = parse(chat({{"tools", tools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}}),
            ApiKind::Chat);
  EXPECT_EQ(r.tool_calls.kind, K::Required);
  EXPECT_FALSE(r.tool_calls.parallel);
  EXPECT_FALSE(r.grammar.empty());
  EXPECT_EQ(r.grammar_param, "tool_choice");
  r = parse(chat({{"tools", tools}, {"tool_choice", kNamedWeather}}), ApiKind::Chat);
  EXPECT_EQ(r.tool_calls.kind, K::Named);
  EXPECT_EQ(r.tool_calls.function, "get_weather");
  EXPECT_FALSE(r.grammar.empty());
  // Legacy fields that ask for nothing.
  EXPECT_NO_THROW(
      parse(chat({{"functions", json::array()}, {"function_call", "none"}}), ApiKind::Chat));
  // Mistral's templates take 9-character ids only.
  tool_format_ = ToolCallFormat::Mistral;
  EXPECT_TRUE(parse(chat({{"tools", tools}}), ApiKind::Chat).tool_calls.short_ids);
  // No format known: auto cannot be parsed, the grammar-forced choices still work.
  tool_format_ = ToolCallFormat::None;
  expect_bad(chat({{"tools", tools}}), "tool_choice",
             "tool_choice \"auto\" needs to know how this model writes tool calls: start "
             "sandwichd with --tool-call-parser llama3_json, hermes or mistral (the chat template "
             "and the tokenizer show none); tool_choice \"required\" or a named function work "
             "without it",
             ApiKind::Chat);
  EXPECT_EQ(
      parse(chat({{"tools", tools}, {"tool_choice", "required"}}), ApiKind::Chat).tool_calls.kind,
      K::Required);
  EXPECT_EQ(parse(chat({{"tools", tools}, {"tool_choice", "none"}}), ApiKind::Chat).tool_calls.kind,
            K::Off);
}

TEST_F(RequestParsing, BadToolFields) {
  auto bad_tools = [&](const json& body, const std::string& param, const std::string& message) {
    expect_bad(chat(body), param, message, ApiKind::Chat);
  };
  auto with_fn = [](json fn) {
    return json{{"tools", {{{"type", "function"}, {"function", fn}}}}};
  };
  bad_tools({{"tools", 5}}, "tools", "'tools' must be a list of tools");
  bad_tools({{"tools", {1}}}, "tools",
            "'tools[0]' must be an object {\"type\": \"function\", \"function\": {...}}");
  bad_tools({{"tools", {kTimeTool, {{"function", {{"name", "x"}}}}}}}, "tools",
            "'tools[1].type' is required (\"function\")");
  bad_tools({{"tools", {{{"type", "retrieval"}}}}}, "tools",
            "'tools[0].type' is 'retrieval'; only \"function\" tools are supported");
  bad_tools({{"tools", {{{"type", "function"}}}}}, "tools",
            "'tools[0].function' must be an object");
  bad_tools(with_fn({{"name", ""}}), "tools",
            "'tools[0].function.name' must be a non-empty string");
  bad_tools(with_fn({{"name", 3}}), "tools", "'tools[0].function.name' must be a non-empty string");
  bad_tools(with_fn({{"name", "f"}, {"description", 1}}), "tools",
            "'tools[0].function.description' must be a string");
  bad_tools(with_fn({{"name", "f"}, {"parameters", "x"}}), "tools",
            "'tools[0].function.parameters' must be a JSON Schema object");
  bad_tools(with_fn({{"name", "f"}, {"strict", "yes"}}), "tools",
            "'tools[0].function.strict' must be a boolean");
  bad_tools({{"tools", {kTimeTool, kTimeTool}}}, "tools",
            "'tools' declares the function 'get_time' twice");
  const json tools = {kWeatherTool, kTimeTool};
  bad_tools({{"tools", tools}, {"tool_choice", "sometimes"}}, "tool_choice",
            "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
            "\"function\", \"function\": {\"name\": ...}}, got \"sometimes\"");
  bad_tools({{"tools", tools}, {"tool_choice", 5}}, "tool_choice",
            "'tool_choice' must be a string or an object");
  const std::string named_shape =
      "a named 'tool_choice' must be {\"type\": \"function\", \"function\": {\"name\": ...}}";
  bad_tools({{"tools", tools}, {"tool_choice", {{"type", "function"}}}}, "tool_choice",
            named_shape);
  bad_tools({{"tools", tools}, {"tool_choice", {{"function", {{"name", "get_time"}}}}}},
            "tool_choice", named_shape);
  bad_tools(
      {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
      "tool_choice", "'tool_choice' names the function 'nope', which is not in 'tools'");
  bad_tools({{"tool_choice", kNamedWeather}}, "tool_choice",
            "'tool_choice' names the function 'get_weather', which is not in 'tools'");
  bad_tools({{"tool_choice", "required"}}, "tool_choice",
            "'tool_choice' \"required\" needs 'tools'");
  bad_tools({{"tools", tools}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls",
            "'parallel_tool_calls' must be a boolean, not string");
  bad_tools({{"functions", {{{"name", "f"}}}}}, "functions",
            "'functions' is deprecated and not supported; send 'tools' ([{\"type\": "
            "\"function\", \"function\": {...}}]) instead");
  bad_tools({{"function_call", "auto"}}, "function_call",
            "'function_call' is deprecated and not supported; send 'tool_choice' instead");
  // A forced choice is a grammar: another one on the same output is refused.
  bad_tools({{"tools", tools},
             {"tool_choice", "required"},
             {"response_format", {{"type", "json_object"}}}},
            "tool_choice",
            "'tool_choice' \"required\" already constrains the output; it cannot be combined "
            "with a 'response_format'");
  bad_tools(
      {{"tools", tools}, {"tool_choice", kNamedWeather}, {"guided_json", {{"type", "object"}}}},
      "tool_choice",
      "'tool_choice' naming a function already constrains the output; it cannot be "
      "combined with 'guided_json'");
  // Parameters the grammar cannot enforce: a 400 naming the tools.
  const json pattern_props = {
      {"type", "function"},
      {"function",
       {{"name", "p"},
        {"parameters",
         {{"type", "object"}, {"patternProperties", {{"^a", {{"type", "integer"}}}}}}}}}};
  const ApiError e =
      error_of(chat({{"tools", {pattern_props}},
                     {"tool_choice", {{"type", "function"}, {"function", {{"name", "p"}}}}}}),
               ApiKind::Chat);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "tools");
  EXPECT_TRUE(e.message.starts_with("the tools' parameters cannot be enforced for tool_choice: "))
      << e.message;
}

TEST_F(RequestParsing, ToolMessagesToolsAndTemplateKwargsReachTheTemplate) {
  template_.emplace(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}"
      "{% if m.tool_calls %}[{{ m.tool_calls[0].id }} {{ m.tool_calls[0].function.name }} "
      "a={{ m.tool_calls[0].function.arguments.a }}]{% endif %}"
      "{% if m.tool_call_id %}({{ m.tool_call_id }}){% endif %};{% endfor %}"
      "{{ tools[0].function.name if tools else 'no tools' }} {{ enable_thinking }}",
      "", "");
  const json messages = {
      {{"role", "user"}, {"content", "Weather?"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", "{\"a\": 1}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}};
  const json body = {{"messages", messages},
                     {"tools", {kWeatherTool}},
                     {"chat_template_kwargs", {{"enable_thinking", false}}}};
  const std::string expected =
      "user:Weather?;assistant:[call_1 get_weather a=1];tool:sunny(call_1);get_weather False";
  EXPECT_EQ(parse(body, ApiKind::Chat).prompts[0], tok_->encode(expected, false, true));
  EXPECT_EQ(parse_tokenize_request(body, ctx()), tok_->encode(expected, false, true));
  json no_tools = body;
  no_tools.erase("tools");
  no_tools.erase("chat_template_kwargs");
  EXPECT_EQ(parse(no_tools, ApiKind::Chat).prompts[0],
            tok_->encode("user:Weather?;assistant:[call_1 get_weather a=1];tool:sunny(call_1);no "
                         "tools ",
                         false, true));

  auto bad_messages = [&](const json& m, const std::string& message) {
    expect_bad({{"messages", m}}, "messages", message, ApiKind::Chat);
  };
  bad_messages({{{"role", "assistant"}, {"tool_calls", 5}}},
               "an assistant message's 'tool_calls' must be a list");
  const std::string call_shape =
      "each of an assistant message's 'tool_calls' needs a string 'id' and a 'function' with "
      "string 'name' and 'arguments'";
  bad_messages({{{"role", "assistant"}, {"tool_calls", {{{"id", 1}}}}}}, call_shape);
  bad_messages({{{"role", "assistant"},
                 {"tool_calls",
                  {{{"id", "c"}, {"function", {{"name", "f"}, {"arguments", json::object()}}}}}}}},
               call_shape);
  bad_messages(
      {{{"role", "assistant"},
        {"tool_calls",
         {{{"id", "c"}, {"type", "x"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}},
      "a tool call's 'type' must be \"function\"");
  bad_messages({{{"role", "tool"}, {"content", "x"}}},
               "a 'tool' message needs a string 'tool_call_id'");
  bad_messages({{{"role", "tool"}, {"tool_call_id", "c"}}}, "a 'tool' message needs 'content'");

  expect_bad(chat({{"chat_template_kwargs", 5}}), "chat_template_kwargs",
             "'chat_template_kwargs' must be an object of template variables", ApiKind::Chat);
  for (const char* k : {"messages", "tools", "add_generation_prompt", "bos_token"})
    expect_bad(chat({{"chat_template_kwargs", {{k, 1}}}}), "chat_template_kwargs",
               std::string("'chat_template_kwargs' may not set '") + k +
                   "': the server sets it from the request",
               ApiKind::Chat);
}

TEST_F(RequestParsing, BodyAndModel) {
  EXPECT_EQ(parse_json_body(R"({"a":1})"), json({{"a", 1}}));
  auto error_of_body = [](const std::string& body) {
    try {
      parse_json_body(body);
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for " << body;
    return ApiError{};
  };
  EXPECT_EQ(error_of_body("[]").message, "the request body must be a JSON object");
  const ApiError e = error_of_body("{");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.message.rfind("the request body is not valid JSON: ", 0), 0u) << e.message;
  EXPECT_EQ(error_of_body(R"({"temperature":1e400})").status, 400);

  // Nesting: kMaxJsonDepth levels parse, one more is refused (before the tree is built).
  auto nested = [](int depth) {
    return R"({"a":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_NO_THROW(parse_json_body(nested(kMaxJsonDepth)));
  const std::string too_deep = "the request body nests arrays and objects more than " +
                               std::to_string(kMaxJsonDepth) + " levels deep";
  EXPECT_EQ(error_of_body(nested(kMaxJsonDepth + 1)).message, too_deep);
  EXPECT_EQ(error_of_body(nested(200000)).message, too_deep);
  // Unclosed, too: refused on depth before the parser sees the missing end.
  EXPECT_EQ(error_of_body(R"({"messages":)" + std::string(200000, '[')).message, too_deep);
  // Brackets in strings (escaped quotes included) are text, not nesting.
  EXPECT_NO_THROW(parse_json_body(R"({"a":")" + std::string(200000, '[') + R"("})"));
  EXPECT_NO_THROW(parse_json_body(R"({"a":"\"[[[[[[[[","b":[1]})"));

  EXPECT_NO_THROW(check_model(Fields(json{{"model", "stories"}}), "stories"));
  EXPECT_NO_THROW(check_model(Fields(json::object()), "stories"));
  try {
    check_model(Fields(json{{"model", "gpt"}}), "stories");
    ADD_FAILURE() << "no error";
  } catch (const ApiError& m) {
    EXPECT_EQ(m.status, 404);
    EXPECT_EQ(m.code, "model_not_found");
    EXPECT_EQ(m.param, "model");
    EXPECT_EQ(m.message, "The model `gpt` does not exist (this server serves `stories`).");
  }
}

// As vLLM (HF tokenizers) and llama-server read a prompt: special-token text is the token.
TEST_F(RequestParsing, SpecialTokenTextInAPromptIsTheToken) {
  const std::vector<int32_t> eos = tok_->encode("</s>", false, true);
  ASSERT_EQ(eos.size(), 1u);
  ASSERT_NE(tok_->encode("</s>", false, false), eos);  // as plain text it is several pieces
  std::vector<int32_t> want = tok_->encode("hello", true);
  want.push_back(eos[0]);
  EXPECT_EQ(parse({{"prompt", "hello</s>"}}).prompts.at(0), want);
  EXPECT_EQ(parse_tokenize_request({{"prompt", "hello</s>"}}, ctx()), want);
}

TEST_F(RequestParsing, TokenizeAndDetokenize) {
  EXPECT_EQ(parse_tokenize_request({{"prompt", "hello"}}, ctx()), tok_->encode("hello", true));
  EXPECT_EQ(parse_tokenize_request({{"prompt", "hello"}, {"add_special_tokens", false}}, ctx()),
            tok_->encode("hello", false));
  EXPECT_THROW(parse_tokenize_request(json::object(), ctx()), ApiError);
  EXPECT_EQ(parse_detokenize_request({{"tokens", {1, 2}}}, *tok_), (std::vector<int32_t>{1, 2}));
  for (const json& bad_tokens : {json("a"), json({1.5}), json({300}), json({-1})})
    EXPECT_THROW(parse_detokenize_request({{"tokens", bad_tokens}}, *tok_), ApiError) << bad_tokens;
}

TEST_F(RequestParsing, ChatTemplateChoice) {
  auto source_of = [](const std::optional<std::string>& flag, const engine::Tokenizer& tok) {
    return choose_chat_template(flag, tok).source;
  };
  EXPECT_EQ(source_of("llama3", *tok_), engine::builtin_chat_template(engine::ChatFormat::Llama3));
  EXPECT_EQ(source_of("chatml", *tok_), engine::builtin_chat_template(engine::ChatFormat::ChatML));
  EXPECT_EQ(source_of("llama2", *tok_), engine::builtin_chat_template(engine::ChatFormat::Llama2));
  // No template and no telling special tokens: Llama-2, and the log says why.
  const ChosenChatTemplate none = choose_chat_template(std::nullopt, *tok_);
  EXPECT_EQ(none.source, engine::builtin_chat_template(engine::ChatFormat::Llama2));
  EXPECT_EQ(none.origin, "built-in llama2 (the model has none)");
  auto bpe =
      engine::make_tokenizer(engine::make_synthetic_vocab(engine::Vocab::Kind::ByteLevelBPE, 1000));
  EXPECT_EQ(source_of(std::nullopt, *bpe),
            engine::builtin_chat_template(engine::ChatFormat::Llama3));
  EXPECT_THROW(choose_chat_template("/no/such/template.jinja", *tok_), std::runtime_error);
  // A template file is used as it is; one that does not parse is refused with the place.
  TempDir dir;
  const std::string mine = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
  std::ofstream(dir / "t.jinja") << mine;
  const ChosenChatTemplate file = choose_chat_template((dir / "t.jinja").string(), *tok_);
  EXPECT_EQ(file.source, mine);
  EXPECT_EQ(file.origin, "file " + (dir / "t.jinja").string() + " (--chat-template)");
  EXPECT_NE(describe(file).find("fnv "), std::string::npos) << describe(file);
  std::ofstream(dir / "bad.jinja") << "{% for m in messages %}";
  try {
    choose_chat_template((dir / "bad.jinja").string(), *tok_);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 1, column 24: the template ends before"),
              std::string::npos)
        << e.what();
  }
  // The model's own template wins; one that cannot render falls back, saying why.
  tok_->set_chat_template(mine);
  EXPECT_EQ(source_of(std::nullopt, *tok_), mine);
  EXPECT_EQ(source_of("chatml", *tok_), engine::builtin_chat_template(engine::ChatFormat::ChatML));
  tok_->set_chat_template("{{ messages | no_such_filter }}");
  const ChosenChatTemplate broken = choose_chat_template(std::nullopt, *tok_);
  EXPECT_EQ(broken.source, engine::builtin_chat_template(engine::ChatFormat::Llama2));
  EXPECT_NE(broken.origin.find("unknown filter 'no_such_filter'"), std::string::npos)
      << broken.origin;
}

TEST_F(RequestParsing, ChatTemplateErrorsAre400s) {
  const engine::ChatTemplate strict(
      "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
      "{% endif %}{{ m.content }}{% endfor %}",
      "", "");
  const ParseContext c{*tok_, strict, 300, 256, 10, 4};
  const json body = {
      {"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}}};
  try {
    parse_generate_request(body, ApiKind::Chat, c);
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages");
    EXPECT_EQ(e.message,
              "chat template error: Conversation roles must alternate "
              "user/assistant/user/assistant/...");
  }
  EXPECT_THROW(parse_tokenize_request(body, c), ApiError);
  const json fine = {{"messages", {{{"role", "user"}, {"content", "a"}}}}};
  EXPECT_EQ(parse_generate_request(fine, ApiKind::Chat, c).prompts[0],
            tok_->encode("a", false, true));
}

}  // namespace
}  // namespace sandwich::server

namespace sandwich::server {
namespace {

// Each token stands for at most longest_token_bytes of the text: bytes / it never exceeds the
// real count, so the pre-check refuses only prompts the tokenizer would have refused too.
TEST(ContextPreCheck, IsALowerBoundOfTheTokenCount) {
  for (auto kind : {engine::Vocab::Kind::SentencePiece, engine::Vocab::Kind::ByteLevelBPE}) {
    const auto tok = engine::make_tokenizer(engine::make_synthetic_vocab(kind, 300));
    const size_t longest = longest_token_bytes(*tok);
    EXPECT_GE(longest, 4u);
    for (const std::string& text :
         {std::string("Once upon a time there was a cat"), std::string(5000, 'a'),
          std::string(777, ' '), std::string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") + "tail",
          std::string("<s></s>")}) {
      const size_t tokens = tok->encode(text, false, true).size();
      EXPECT_LE((text.size() + longest - 1) / longest, tokens) << text.substr(0, 40);
    }
  }
}

TEST(ContextPreCheck, RefusesBeforeTokenizingAndLimitsPromptBytes) {
  const auto tok =
      engine::make_tokenizer(engine::make_synthetic_vocab(engine::Vocab::Kind::SentencePiece, 300));
  const engine::ChatTemplate chatml(engine::builtin_chat_template(engine::ChatFormat::ChatML),
                                    "<s>", "</s>");
  const size_t longest = longest_token_bytes(*tok);
  const ParseContext ctx{*tok, chatml, 300, 256, 10, 4, /*max_prompt_bytes=*/100000, longest};
  const auto error_of = [&](const json& body, ApiKind kind) {
    try {
      parse_generate_request(body, kind, ctx);
    } catch (const ApiError& e) {
      return e;
    }
    ADD_FAILURE() << "no error";
    return ApiError{};
  };
  // Surely over 256 tokens: refused with the context error, "at least".
  ApiError e = error_of({{"prompt", std::string(longest * 300, 'a')}}, ApiKind::Completion);
  EXPECT_EQ(e.param, "prompt");
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(e.message.find("maximum context length is 256 tokens. However, you requested at least"),
            std::string::npos)
      << e.message;
  e = error_of({{"messages", {{{"role", "user"}, {"content", std::string(longest * 300, 'a')}}}}},
               ApiKind::Chat);
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(e.message.find("at least"), std::string::npos) << e.message;
  // Over the byte limit: its own error, naming the flag.
  e = error_of({{"prompt", {std::string(60000, 'a'), std::string(60000, 'b')}}},
               ApiKind::Completion);
  EXPECT_NE(e.message.find("--max-prompt-bytes"), std::string::npos) << e.message;
  try {
    parse_tokenize_request({{"prompt", std::string(100001, 'a')}}, ctx);
    ADD_FAILURE() << "no error";
  } catch (const ApiError& t) {
    EXPECT_NE(t.message.find("--max-prompt-bytes"), std::string::npos) << t.message;
  }
  // Within both: the tokenizer's count decides, as before.
  EXPECT_EQ(parse_generate_request({{"prompt", "hello"}}, ApiKind::Completion, ctx).prompts.size(),
            1u);
}

}  // namespace
}  // namespace sandwich::server
