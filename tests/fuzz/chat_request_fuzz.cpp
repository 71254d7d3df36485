// Whole chat requests through a hostile chat template: the input is a template, a line "@@",
// then a JSON request body (no "@@" line: the whole input is the template and the body is a
// two-message chat, so that a template guarded by messages|length > 1 is rendered). The template
// is built as sandwichd builds the one it serves, and the body goes the server's way for chat:
// parse_json_body, check_model, then parse_generate_request or /tokenize's chat path (by the
// input's parity). A client error is an ApiError; nothing else may come out, and nothing may crash
// or run without bound. The int_min_* seeds crash until the interpreter's integer checks are in.
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "request_parsing.h"
#include "server_fuzz_support.h"

namespace {

using namespace sandwich;
using fuzz::expect_client_error_at_most;
using fuzz::served_tokenizer;

constexpr std::string_view kSeparator = "\n@@\n";
constexpr std::string_view kTwoMessages =
    R"({"model":"fuzz-model","max_tokens":4,"messages":[{"role":"user","content":"Hi"},)"
    R"({"role":"assistant","content":"Hello"}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const size_t sep = input.find(kSeparator);
  const std::string_view source = input.substr(0, sep);
  const std::string body(sep == std::string_view::npos ? kTwoMessages
                                                       : input.substr(sep + kSeparator.size()));
  const engine::Tokenizer& tok = served_tokenizer();
  std::optional<engine::ChatTemplate> chat_template;
  try {
    chat_template.emplace(source, "<s>", "</s>");
  } catch (const engine::jinja::Error&) {
    return 0;  // sandwichd refuses such a template at start-up
  }
  static const size_t longest = server::longest_token_bytes(tok);
  const server::ParseContext ctx{.tokenizer = tok,
                                 .chat_template = *chat_template,
                                 .vocab_size = tok.vocab_size(),
                                 .max_model_len = 256,
                                 .max_waiting = 64,
                                 .max_n = 8,
                                 .max_prompt_bytes = 1u << 20,
                                 .longest_token_bytes = longest};
  // One render per input (a template may burn its whole step limit): the input's parity picks
  // completions' chat path or /tokenize's (which has no completion, so no context pre-check).
  expect_client_error_at_most([&] {
    const nlohmann::json j = server::parse_json_body(body);
    server::check_model(server::Fields(j), "fuzz-model");
    if (size % 2 == 0)
      (void)server::parse_generate_request(j, server::ApiKind::Chat, ctx);
    else
      (void)server::parse_tokenize_request(j, ctx);
  });
  return 0;
}
