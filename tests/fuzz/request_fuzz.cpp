// Request bodies as sandwichd receives them: the JSON body, the model check, and each route's
// parser and validator (completions, chat, /v1/embeddings, /tokenize, /detokenize). A client error
// is an ApiError; nothing else may come out.
#include <exception>

#include "fuzz_support.h"
#include "request_parsing.h"
#include "server_fuzz_support.h"

namespace {

using namespace sandwich;
using fuzz::expect_client_error_at_most;
using fuzz::served_tokenizer;

// The built-in templates, and one that raises on roles it does not take (as Gemma's does).
const engine::ChatTemplate& chat_template(size_t i) {
  static const engine::ChatTemplate templates[] = {
      {engine::builtin_chat_template(engine::ChatFormat::Llama3), "<s>", "</s>"},
      {engine::builtin_chat_template(engine::ChatFormat::Llama2), "<s>", "</s>"},
      {engine::builtin_chat_template(engine::ChatFormat::ChatML), "<s>", "</s>"},
      {"{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
       "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
       "<start_of_turn>{{ m.role }}\n{{ m.content | trim }}<end_of_turn>\n{% endfor %}",
       "<bos>", "<eos>"}};
  return templates[i % 4];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const engine::Tokenizer& tok = served_tokenizer();
  // The chat template varies with the input, so each one sees every request.
  const server::ParseContext ctx{.tokenizer = tok,
                                 .chat_template = chat_template(size),
                                 .vocab_size = tok.vocab_size(),
                                 .max_model_len = 256,
                                 .max_waiting = 64,
                                 .max_n = 8,
                                 .tool_format = server::ToolCallFormat::Hermes};
  expect_client_error_at_most([&] {
    const nlohmann::json body = server::parse_json_body(std::string(fuzz::as_text(data, size)));
    server::check_model(server::Fields(body), "fuzz-model");
    for (auto kind : {server::ApiKind::Completion, server::ApiKind::Chat})
      expect_client_error_at_most([&] { (void)server::parse_generate_request(body, kind, ctx); });
    expect_client_error_at_most([&] { (void)server::parse_tokenize_request(body, ctx); });
    expect_client_error_at_most([&] {
      server::Fields f(body);
      (void)server::parse_embedding_request(f, ctx, /*dim=*/64);
    });
    expect_client_error_at_most(
        [&] { (void)tok.decode(server::parse_detokenize_request(body, tok)); });
  });
  return 0;
}
