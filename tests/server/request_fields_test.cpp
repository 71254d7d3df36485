// The fields a request's parser never read: what the log names as ignored (as vLLM does). Known
// means read by the parser, so the fields of every endpoint are checked here against a body
// that holds all of them, plus a few no parser knows.
#include "request_fields.h"

#include <gtest/gtest.h>

#include "request_log.h"
#include "request_parsing.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;
using Names = std::vector<std::string>;

class RequestFields : public ::testing::Test {
 protected:
  RequestFields()
      : tok_(engine::make_tokenizer(
            engine::make_synthetic_vocab(engine::Vocab::Kind::SentencePiece, 300))),
        chatml_(engine::builtin_chat_template(engine::ChatFormat::ChatML), "<s>", "</s>") {}

  ParseContext ctx() const { return {*tok_, chatml_, 300, 256, 10, 4}; }

  // What the log would name after the route's model check and parser.
  Names unread_after(const json& body, ApiKind kind) const {
    Fields f(body);
    check_model(f, "m");
    parse_generate_request(f, kind, ctx());
    return f.unread();
  }

  std::unique_ptr<engine::Tokenizer> tok_;
  engine::ChatTemplate chatml_;
};

TEST(RequestFieldsUnread, KeysNeverAskedFor) {
  const json body = {{"a", 1}, {"b", nullptr}, {"c", {{"nested", 1}}}, {"d", "x"}};
  const Fields f(body);
  EXPECT_EQ(f.unread(), (Names{"a", "b", "c", "d"}));
  f.integer("a", 0, 0, 9);
  f.get("b");     // null: asked for, so known
  f.get("none");  // absent: nothing to report
  EXPECT_EQ(f.unread(), (Names{"c", "d"}));
  // A nested object taken whole: its keys are its reader's business.
  f.get("c");
  f.string("d");
  EXPECT_TRUE(f.unread().empty());
}

TEST(RequestFieldsUnread, ObjectsReadFieldByFieldReportTheirOwn) {
  const json body = {{"o", {{"known", 1}, {"other", 2}}}, {"top", 1}};
  const Fields f(body);
  const Fields& o = f.object("o");
  EXPECT_EQ(&o, &f.object("o"));
  o.integer("known", 0, 0, 9);
  EXPECT_EQ(f.unread(), (Names{"top", "o.other"}));
  const json flat = {{"o", 5}};
  EXPECT_TRUE(Fields(flat).object("o").unread().empty());  // not an object: nothing in it
}

TEST_F(RequestFields, EveryCompletionFieldIsKnown) {
  const json body = {
      {"model", "m"},
      {"prompt", "hello"},
      {"max_tokens", 4},
      {"max_completion_tokens", 4},
      {"temperature", 0.5},
      {"top_p", 0.9},
      {"top_k", 5},
      {"min_p", 0.1},
      {"presence_penalty", 0.1},
      {"frequency_penalty", 0.1},
      {"repetition_penalty", 1.1},
      {"seed", 1},
      {"logit_bias", {{"5", 1}}},
      {"stop", "x"},
      {"stop_token_ids", {3}},
      {"ignore_eos", false},
      {"min_tokens", 1},
      {"skip_special_tokens", true},
      {"n", 2},
      {"stream", true},
      {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}},
      {"logprobs", 2},
      {"echo", false},
      {"best_of", 1},
      {"suffix", nullptr},
      {"use_beam_search", false},
      {"include_stop_str_in_output", false},
      // Accepted and type-checked, with no effect on the output.
      {"user", "u"},
      {"metadata", {{"k", "v"}}},
      {"store", false},
      {"service_tier", "auto"},
      // Not ours.
      {"frobnicate", true},
      {"top_a", 0.2}};
  EXPECT_EQ(unread_after(body, ApiKind::Completion),
            (Names{"frobnicate", "top_a", "stream_options.continuous_usage_stats"}));
}

TEST_F(RequestFields, ChatFieldsAndConditionalOnesAreKnown) {
  json body = {{"model", "m"},
               {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"logprobs", true},
               {"top_logprobs", 2},
               {"max_tokens", 4},
               {"user", "u"},
               {"tool_choice", "none"},
               {"tools", json::array()},
               {"response_format", {{"type", "text"}}},
               {"chat_template_kwargs", nullptr},
               {"mirostat", 2}};
  EXPECT_EQ(unread_after(body, ApiKind::Chat), (Names{"mirostat"}));
  // top_logprobs without logprobs is read (and refused), never ignored.
  body["logprobs"] = false;
  body.erase("top_logprobs");
  body["echo"] = true;  // a completions field: chat does not read it
  EXPECT_EQ(unread_after(body, ApiKind::Chat), (Names{"echo", "mirostat"}));
}

TEST_F(RequestFields, TokenizeAndDetokenize) {
  {
    const json body = {{"model", "m"}, {"prompt", "hi"}, {"add_special_tokens", true}, {"x", 1}};
    Fields f(body);
    check_model(f, "m");
    parse_tokenize_request(f, ctx());
    EXPECT_EQ(f.unread(), (Names{"x"}));
  }
  {
    const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"y", 1}};
    Fields f(body);
    parse_tokenize_request(f, ctx());
    EXPECT_EQ(f.unread(), (Names{"y"}));
  }
  const json body = {{"tokens", {1, 2}}, {"z", 1}};
  Fields f(body);
  parse_detokenize_request(f, *tok_);
  EXPECT_EQ(f.unread(), (Names{"z"}));
}

TEST(RequestFieldsUnread, LogMessageIsVllmsAndBounded) {
  EXPECT_EQ(ignored_fields_message({"a", "b"}),
            "The following fields were present in the request but ignored: {'a', 'b'}");
  Names many(1000, std::string(10000, 'k'));
  const std::string m = ignored_fields_message(many);
  EXPECT_LT(m.size(), 3000u);
  EXPECT_NE(m.find("... (1000 in all)}"), std::string::npos) << m;
}

}  // namespace
}  // namespace sandwich::server
