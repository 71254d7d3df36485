#pragma once
// Request bodies to validated requests. Everything the client got wrong is an ApiError (400, or
// 404 for an unknown model) thrown before anything is queued; the only engine parts used are the
// tokenizer and the chat template.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "engine/runtime/sampler.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "request_fields.h"
#include "tool_call.h"

namespace sandwich::server {

// What parsing needs to know of the model and the server.
struct ParseContext {
  const engine::Tokenizer& tokenizer;
  const engine::ChatTemplate& chat_template;
  int32_t vocab_size;     // the model's: token ids in prompts and logit_bias are below it
  int32_t max_model_len;  // prompt + completion tokens at most
  int32_t max_waiting;    // sequences the queue holds: one request may ask for no more
  int max_n;              // largest "n"
  // Prompt text bytes a request may send, checked before tokenizing (it bounds the tokenizer's
  // time): completions' prompt strings together; chat's message contents, and the rendered text.
  size_t max_prompt_bytes = SIZE_MAX;
  // longest_token_bytes(tokenizer): a text of B bytes needs at least B / it tokens, so a prompt
  // that must exceed the context is refused without tokenizing it. 0: no such check.
  size_t longest_token_bytes = 0;
  // How the model writes tool calls (never Auto): what tool_choice auto parses its output with.
  ToolCallFormat tool_format = ToolCallFormat::None;
};

// The most input bytes one token of this vocabulary stands for (its stored text or its piece,
// whichever is longer; at least 4, a whole UTF-8 character for an unknown-token fallback).
size_t longest_token_bytes(const engine::Tokenizer& tok);

enum class ApiKind { Completion, Chat };

// A /v1/completions or /v1/chat/completions request, checked and tokenized.
struct GenerateRequest {
  ApiKind kind = ApiKind::Completion;
  std::vector<std::vector<int32_t>> prompts;  // token ids; chat: one, the rendered messages
  int n = 1;                                  // choices per prompt
  engine::SamplingParams sampling;
  int32_t max_tokens = 16;  // -1: whatever the context leaves
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // vLLM's extras: EngineRequest's fields of the same names.
  std::vector<int32_t> stop_token_ids;
  int32_t min_tokens = 0;
  bool skip_special_tokens = true;
  int32_t logprobs = -1;  // -1: none; else the top n (chat: top_logprobs, with logprobs = true)
  int32_t prompt_logprobs = -1;  // vLLM's: -1 none; else each prompt token's and the top n
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // GBNF the output must match (structured output, or a required tool call); empty = none.
  // grammar_param names the field it came from, for errors.
  std::string grammar;
  std::string grammar_param;
  // Chat: what the output is parsed into (content and tool calls).
  ToolCallParsing tool_calls;
  // The grammar compiled for the engine (set after parsing, from the server's grammar cache).
  std::shared_ptr<engine::grammar::GrammarAutomaton> grammar_automaton;

  size_t sequences() const { return prompts.size() * static_cast<size_t>(n); }
};

// Deepest nesting of arrays and objects a request body may have: real requests need a handful
// of levels; a deeper body is refused before any tree is built.
inline constexpr int kMaxJsonDepth = 64;

// The body as a JSON object (400 for invalid JSON, or nesting deeper than kMaxJsonDepth).
nlohmann::json parse_json_body(const std::string& body);
// A 'model' field other than the served one is a 404, as OpenAI answers it.
void check_model(const Fields& f, const std::string& served_model_name);

// Each parser reads its fields through `body`, which records them, so that body.unread()
// afterwards names the fields it ignored.
GenerateRequest parse_generate_request(Fields& body, ApiKind kind, const ParseContext& ctx);
// /tokenize: the ids of 'prompt' (a string) or of 'messages' rendered as a chat (with 'tools' and
// 'chat_template_kwargs', as for a chat request).
std::vector<int32_t> parse_tokenize_request(Fields& body, const ParseContext& ctx);
// POST /v1/embeddings, as OpenAI's: the inputs tokenized (as completions' prompts are).
struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;
  bool base64 = false;  // encoding_format "base64": little-endian float32, base64-encoded
};
// Most inputs one embeddings request may carry (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;
// `dim`: the model's embedding size, the only 'dimensions' accepted.
EmbeddingRequest parse_embedding_request(Fields& body, const ParseContext& ctx, int32_t dim);
// /detokenize: 'tokens', checked against the tokenizer's vocabulary.
std::vector<int32_t> parse_detokenize_request(Fields& body, const engine::Tokenizer& tok);

// The same, for a body whose ignored fields do not matter (tests, fuzzers).
inline GenerateRequest parse_generate_request(const nlohmann::json& body, ApiKind kind,
                                              const ParseContext& ctx) {
  Fields f(body);
  return parse_generate_request(f, kind, ctx);
}
inline std::vector<int32_t> parse_tokenize_request(const nlohmann::json& body,
                                                   const ParseContext& ctx) {
  Fields f(body);
  return parse_tokenize_request(f, ctx);
}
inline std::vector<int32_t> parse_detokenize_request(const nlohmann::json& body,
                                                     const engine::Tokenizer& tok) {
  Fields f(body);
  return parse_detokenize_request(f, tok);
}

// The chat template in use and where it came from (for the start-up log).
struct ChosenChatTemplate {
  std::string source;  // Jinja
  std::string origin;  // e.g. "the model's", "file t.jinja", "built-in llama2 (the model has none)"
};

// --chat-template (a built-in name, or a file holding a Jinja template), else the model's own
// template, else a built-in one by the model's special tokens (Llama-3, ChatML, else Llama-2).
// A model template that does not parse, or cannot render a one-message chat, falls back the same
// way, said so in `origin`. Throws std::runtime_error for a --chat-template that is neither a name
// nor a readable file, or whose template does not parse or render.
ChosenChatTemplate choose_chat_template(const std::optional<std::string>& chat_template,
                                        const engine::Tokenizer& tok);

// For the start-up log: where it came from, its size, a hash and its first line.
std::string describe(const ChosenChatTemplate& chosen);

// The template with the tokenizer's BOS and EOS texts.
engine::ChatTemplate make_chat_template(const ChosenChatTemplate& chosen,
                                        const engine::Tokenizer& tok);

}  // namespace sandwich::server
