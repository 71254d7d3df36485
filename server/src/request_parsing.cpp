#include "request_parsing.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "api_error.h"
#include "chat_messages.h"
#include "common/bounded_file.h"
#include "engine/grammar/grammar.h"
#include "structured_output.h"
#include "tool_choice_schema.h"
#include "tool_request.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;

// What OpenAI answers for a prompt over the context. `at_least`: the prompt's count is a lower
// bound (the text was not tokenized).
[[noreturn]] void context_too_long(int32_t max_len, int64_t prompt_tokens, int64_t want,
                                   bool at_least, const char* param) {
  const std::string least = at_least ? "at least " : "";
  throw ApiError{400,
                 "This model's maximum context length is " + std::to_string(max_len) +
                     " tokens. However, you requested " + least +
                     std::to_string(prompt_tokens + want) + " tokens (" + least +
                     std::to_string(prompt_tokens) + " in the messages, " + std::to_string(want) +
                     " in the completion). Please reduce the length of the messages " +
                     "or completion.",
                 "invalid_request_error", param, "context_length_exceeded"};
}

void check_prompt_bytes(size_t bytes, const ParseContext& ctx, const std::string& what,
                        const char* param) {
  if (bytes > ctx.max_prompt_bytes)
    bad(what + " " + std::to_string(bytes) + " bytes, more than this server takes (" +
            std::to_string(ctx.max_prompt_bytes) + ", --max-prompt-bytes)",
        param);
}

// Before tokenizing `bytes` of text for a completion of at least `want` tokens (< 0: no
// completion, no check): every token stands for at most longest_token_bytes of the text, so a
// prompt whose lower bound is over the context is refused without the tokenizer's time.
void precheck_context(size_t bytes, const ParseContext& ctx, int64_t want, const char* param) {
  if (want < 0 || ctx.longest_token_bytes == 0) return;
  const auto least =
      static_cast<int64_t>((bytes + ctx.longest_token_bytes - 1) / ctx.longest_token_bytes);
  if (least + want > ctx.max_model_len)
    context_too_long(ctx.max_model_len, least, want, true, param);
}

// prompt: string, token ids, list of strings, or list of token-id lists. `want`: the completion's
// tokens at least, for the context pre-check.
std::vector<std::vector<int32_t>> completion_prompts(const Fields& f, const ParseContext& ctx,
                                                     int64_t want, size_t max_prompts = 64) {
  const json* p = f.get("prompt");
  if (!p) bad("'prompt' is required", "prompt");
  const engine::Tokenizer& tok = ctx.tokenizer;
  auto ids_of = [&](const json& arr) {
    std::vector<int32_t> ids;
    for (auto& v : arr) {
      if (!v.is_number_integer()) bad("'prompt' token ids must be integers", "prompt");
      const auto t = as_int64(v);
      if (!t || *t < 0 || *t >= ctx.vocab_size)
        bad("'prompt' token id " + v.dump() + " is outside the vocabulary", "prompt");
      ids.push_back(static_cast<int32_t>(*t));
    }
    return ids;
  };
  auto text_of = [&](const std::string& s) {
    precheck_context(s.size(), ctx, want, "prompt");
    // Special-token text ("<|eot_id|>") is the token, as vLLM's HF tokenizers and llama-server
    // read a prompt.
    return tok.encode(s, tok.add_bos_default(), true);
  };
  // All the text first: the limit bounds the tokenizer's time for the whole request.
  size_t text_bytes = p->is_string() ? p->get_ref<const std::string&>().size() : 0;
  if (p->is_array())
    for (const json& e : *p)
      if (e.is_string()) text_bytes += e.get_ref<const std::string&>().size();
  check_prompt_bytes(text_bytes, ctx, "the prompt text is", "prompt");
  std::vector<std::vector<int32_t>> out;
  if (p->is_string()) {
    out.push_back(text_of(p->get<std::string>()));
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
    out.push_back(ids_of(*p));
  } else if (p->is_array() && !p->empty()) {
    for (auto& e : *p) {
      if (e.is_string())
        out.push_back(text_of(e.get<std::string>()));
      else if (e.is_array())
        out.push_back(ids_of(e));
      else
        bad("'prompt' must be a string, a list of token ids, or a list of either", "prompt");
    }
  } else {
    bad("'prompt' must be a non-empty string, a list of token ids, or a list of either", "prompt");
  }
  if (out.size() > max_prompts)
    bad("at most " + std::to_string(max_prompts) + " prompts per request", "prompt");
  for (auto& ids : out)
    if (ids.empty()) bad("a prompt is empty (no tokens)", "prompt");
  return out;
}

// chat_template_kwargs: more variables for the template (e.g. enable_thinking), none of the ones
// the server sets itself.
nlohmann::ordered_json template_kwargs(const Fields& f) {
  const json* k = f.get("chat_template_kwargs");
  if (!k) return nullptr;
  if (!k->is_object())
    bad("'chat_template_kwargs' must be an object of template variables", "chat_template_kwargs");
  for (const char* key : engine::kReservedChatTemplateKeys)
    if (k->contains(key))
      bad(std::string("'chat_template_kwargs' may not set '") + key +
              "': the server sets it from the request",
          "chat_template_kwargs");
  return *k;
}

// messages (with the request's tools and template variables), rendered with the chat template and
// tokenized. `want`: the completion's tokens at least, for the context pre-check (< 0: none,
// /tokenize).
std::vector<int32_t> chat_prompt(const Fields& f, const ParseContext& ctx, int64_t want,
                                 const ToolRequest& tools) {
  const json* m = f.get("messages");
  if (!m || !m->is_array() || m->empty()) bad("'messages' must be a non-empty list", "messages");
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  size_t content_bytes = 0;
  for (const json& e : *m) {
    msgs.push_back(template_message(e, content_bytes));
    check_prompt_bytes(content_bytes, ctx, "the messages' contents are", "messages");
  }
  engine::ChatRenderOptions opt;
  opt.tools = tools.tools;
  opt.extra = template_kwargs(f);
  std::string text;
  try {
    text = ctx.chat_template.render(msgs, opt);
  } catch (const engine::jinja::Error& e) {
    bad(std::string("chat template error: ") + e.what(), "messages");
  }
  check_prompt_bytes(text.size(), ctx, "the chat template made a prompt of", "messages");
  precheck_context(text.size(), ctx, want, "messages");
  return ctx.tokenizer.encode(text, false, true);
}

// tool_choice and the parsing of the output it asks for; required and named get their grammar.
void set_tool_calls(const ToolRequest& t, const ParseContext& ctx, GenerateRequest& r) {
  ToolCallParsing& p = r.tool_calls;
  p.parallel = t.parallel;
  // Mistral's templates refuse any other id in the next turn.
  p.short_ids = ctx.tool_format == ToolCallFormat::Mistral;
  switch (t.choice) {
    case ToolChoice::None:
      // The model is not to call: its output is content (the tools still reach the template,
      // as vLLM passes them).
      return;
    case ToolChoice::Auto:
      if (ctx.tool_format == ToolCallFormat::None)
        bad("tool_choice \"auto\" needs to know how this model writes tool calls: start sandwichd "
            "with --tool-call-parser llama3_json, hermes or mistral (the chat template and the "
            "tokenizer show none); tool_choice \"required\" or a named function work without it",
            "tool_choice");
      p.kind = ToolCallParsing::Kind::Format;
      p.format = ctx.tool_format;
      return;
    case ToolChoice::Required:
    case ToolChoice::Named:
      p.kind = t.choice == ToolChoice::Required ? ToolCallParsing::Kind::Required
                                                : ToolCallParsing::Kind::Named;
      p.function = t.function;
      try {
        r.grammar = engine::grammar::gbnf_from_json_schema(tool_choice_schema(t));
      } catch (const engine::grammar::GrammarError& e) {
        bad(std::string("the tools' parameters cannot be enforced for tool_choice: ") + e.what(),
            "tools");
      }
      r.grammar_param = "tool_choice";
      return;
  }
}

// The sampling fields, max_tokens, stop and ignore_eos.
void parse_sampling(const Fields& f, const ParseContext& ctx, GenerateRequest& r) {
  const bool chat = r.kind == ApiKind::Chat;
  engine::SamplingParams& s = r.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 1.0, 0.0, 100.0));
  s.top_p = static_cast<float>(f.number("top_p", 1.0, 1e-9, 1.0));
  s.top_k = static_cast<int32_t>(f.integer("top_k", -1, -1, 1 << 20));
  s.min_p = static_cast<float>(f.number("min_p", 0.0, 0.0, 1.0));
  s.presence_penalty = static_cast<float>(f.number("presence_penalty", 0.0, -2.0, 2.0));
  s.frequency_penalty = static_cast<float>(f.number("frequency_penalty", 0.0, -2.0, 2.0));
  s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 1.0, 1e-6, 100.0));
  if (f.get("seed")) s.seed = static_cast<uint64_t>(f.integer("seed", 0, INT64_MIN, INT64_MAX));
  if (const json* lb = f.get("logit_bias")) {
    // {"token id": bias}, as OpenAI: ids as strings, biases in [-100, 100].
    if (!lb->is_object())
      bad("'logit_bias' must be an object mapping token ids to biases", "logit_bias");
    if (lb->size() > 1024) bad("'logit_bias' may name at most 1024 tokens", "logit_bias");
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      const std::string& key = it.key();
      int64_t id = -1;
      if (!key.empty() && key.size() <= 10 &&
          key.find_first_not_of("0123456789") == std::string::npos)
        id = std::stoll(key);
      if (id < 0 || id >= ctx.vocab_size)
        bad("'logit_bias' key '" + key + "' is not a token id of this model (0.." +
                std::to_string(ctx.vocab_size - 1) + ")",
            "logit_bias");
      if (!it.value().is_number()) bad("'logit_bias' values must be numbers", "logit_bias");
      const double b = it.value().get<double>();
      if (!(b >= -100.0 && b <= 100.0))
        bad("'logit_bias' values must be between -100 and 100", "logit_bias");
      s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
    }
  }
  const int32_t max_len = ctx.max_model_len;
  // Checked even when max_completion_tokens overrides it.
  int64_t max_tokens = f.integer("max_tokens", chat ? -1 : 16, 1, max_len);
  if (f.get("max_completion_tokens"))
    max_tokens = f.integer("max_completion_tokens", 16, 1, max_len);
  r.max_tokens = static_cast<int32_t>(max_tokens);
  r.ignore_eos = f.boolean("ignore_eos", false);
  r.min_tokens = static_cast<int32_t>(f.integer("min_tokens", 0, 0, max_len));
  if (r.max_tokens >= 0 && r.min_tokens > r.max_tokens)
    bad("'min_tokens' (" + std::to_string(r.min_tokens) + ") must not exceed 'max_tokens' (" +
            std::to_string(r.max_tokens) + ")",
        "min_tokens");
  r.skip_special_tokens = f.boolean("skip_special_tokens", true);
  if (const json* ids = f.get("stop_token_ids")) {
    if (!ids->is_array()) bad("'stop_token_ids' must be a list of token ids", "stop_token_ids");
    if (ids->size() > 1024) bad("at most 1024 'stop_token_ids'", "stop_token_ids");
    for (const json& v : *ids) {
      const auto t = v.is_number_integer() ? as_int64(v) : std::nullopt;
      if (!t || *t < 0 || *t >= ctx.vocab_size)
        bad("'stop_token_ids' entry " + (v.is_primitive() ? v.dump() : std::string("(a list)")) +
                " is not a token id of this model (0.." + std::to_string(ctx.vocab_size - 1) + ")",
            "stop_token_ids");
      r.stop_token_ids.push_back(static_cast<int32_t>(*t));
    }
  }
  if (const json* st = f.get("stop")) {
    if (st->is_string())
      r.stop.push_back(st->get<std::string>());
    else if (st->is_array()) {
      if (st->size() > 16) bad("at most 16 stop strings", "stop");
      for (auto& x : *st) {
        if (!x.is_string()) bad("'stop' must be a string or a list of strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("'stop' must be a string or a list of strings", "stop");
    }
  }
  // Type-checked, otherwise unused: they change nothing in the output.
  f.string("user");
  f.string("service_tier");
  f.boolean("store", false);
  if (const json* md = f.get("metadata"); md && !md->is_object())
    bad("'metadata' must be an object", "metadata");
}

// Features a client may rely on that this server does not have: refused, never ignored.
void refuse_unsupported(const Fields& f, bool chat, int max_n) {
  if (!chat && f.boolean("echo", false)) bad("'echo' is not supported by this server", "echo");
  if (!chat && f.integer("best_of", 1, 1, max_n) > 1)
    bad("'best_of' > 1 is not supported by this server; use 'n'", "best_of");
  if (!chat && f.get("suffix")) bad("'suffix' is not supported by this server", "suffix");
  // vLLM extras that would change the output.
  if (f.boolean("use_beam_search", false))
    bad("'use_beam_search' is not supported by this server", "use_beam_search");
  if (f.boolean("include_stop_str_in_output", false))
    bad("'include_stop_str_in_output' is not supported by this server",
        "include_stop_str_in_output");
}

// Whether arrays and objects nest more than `limit` deep, counted on the raw text (brackets in
// strings skipped) so that a deep body is refused before nlohmann::json builds its tree. Exact
// for valid JSON; invalid JSON is refused by the parser anyway.
bool json_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

json parse_json_body(const std::string& body) {
  if (json_deeper_than(body, kMaxJsonDepth))
    bad("the request body nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
        " levels deep");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e400)
    bad(std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad("the request body must be a JSON object");
  return j;
}

void check_model(const Fields& f, const std::string& served_model_name) {
  auto m = f.string("model");
  if (m && *m != served_model_name)
    throw ApiError{
        404,
        "The model `" + *m + "` does not exist (this server serves `" + served_model_name + "`).",
        "invalid_request_error", "model", "model_not_found"};
}

GenerateRequest parse_generate_request(Fields& f, ApiKind kind, const ParseContext& ctx) {
  // The checks run in the order a client sees their errors: fields first, then the prompts, then
  // what the prompts and fields ask for together.
  const bool chat = kind == ApiKind::Chat;
  GenerateRequest r;
  r.kind = kind;
  parse_sampling(f, ctx, r);
  r.n = static_cast<int>(f.integer("n", 1, 1, ctx.max_n));
  r.stream = f.boolean("stream", false);
  // Before refuse_unsupported: a forced tool choice with structured output gets its own message.
  const ToolRequest tools = chat ? parse_tool_request(f) : ToolRequest{};
  refuse_unsupported(f, chat, ctx.max_n);
  parse_structured_output(f, r);
  if (const json* so = f.get("stream_options")) {
    if (!r.stream) bad("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (!so->is_object()) bad("'stream_options' must be an object", "stream_options");
    r.include_usage = f.object("stream_options").boolean("include_usage", false);
  }
  if (chat) {
    if (f.boolean("logprobs", false))
      r.logprobs = static_cast<int32_t>(f.integer("top_logprobs", 0, 0, 20));
    else if (f.get("top_logprobs"))
      bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  } else if (f.get("logprobs")) {
    r.logprobs = static_cast<int32_t>(f.integer("logprobs", 0, 0, 20));
  }
  // vLLM's: an integer up to its --max-logprobs (20), refused with a stream.
  if (f.get("prompt_logprobs")) {
    r.prompt_logprobs = static_cast<int32_t>(f.integer("prompt_logprobs", 0, 0, 20));
    if (r.stream)
      bad("'prompt_logprobs' is not available when 'stream' is true", "prompt_logprobs");
  }
  const int64_t want = r.max_tokens < 0 ? std::max(1, r.min_tokens) : r.max_tokens;
  if (chat) set_tool_calls(tools, ctx, r);
  r.prompts = chat ? std::vector<std::vector<int32_t>>{chat_prompt(f, ctx, want, tools)}
                   : completion_prompts(f, ctx, want);
  for (auto& p : r.prompts)
    if (static_cast<int64_t>(p.size()) + want > ctx.max_model_len)
      context_too_long(ctx.max_model_len, static_cast<int64_t>(p.size()), want, false,
                       chat ? "messages" : "prompt");
  try {
    r.sampling.validate();
  } catch (const std::invalid_argument& e) {
    bad(e.what());
  }
  // The whole request is queued at once or not at all; one that could never be (more sequences
  // than the queue holds) is the client's error, not a reason to retry.
  const int64_t total = static_cast<int64_t>(r.sequences());
  if (total > ctx.max_waiting)
    bad("this request asks for " + std::to_string(total) + " sequences (" +
            std::to_string(r.prompts.size()) + " prompt(s) x n=" + std::to_string(r.n) +
            ") but the server queues at most " + std::to_string(ctx.max_waiting) +
            "; send fewer prompts or a smaller 'n'",
        r.n > 1 ? "n" : "prompt");
  return r;
}

std::vector<int32_t> parse_tokenize_request(Fields& f, const ParseContext& ctx) {
  if (f.get("messages")) return chat_prompt(f, ctx, -1, parse_tool_request(f));
  auto p = f.string("prompt");
  if (!p) bad("'prompt' (a string) or 'messages' is required", "prompt");
  check_prompt_bytes(p->size(), ctx, "the prompt is", "prompt");
  const engine::Tokenizer& tok = ctx.tokenizer;
  return tok.encode(*p, f.boolean("add_special_tokens", true) && tok.add_bos_default(), true);
}

EmbeddingRequest parse_embedding_request(Fields& f, const ParseContext& ctx, int32_t dim) {
  EmbeddingRequest r;
  if (const auto fmt = f.string("encoding_format")) {
    if (*fmt != "float" && *fmt != "base64")
      bad("'encoding_format' must be \"float\" or \"base64\", got \"" + *fmt + "\"",
          "encoding_format");
    r.base64 = *fmt == "base64";
  }
  if (f.get("dimensions") && f.integer("dimensions", dim, 1, INT32_MAX) != dim)
    bad("this model's embeddings have " + std::to_string(dim) +
            " dimensions and cannot be shortened; leave out 'dimensions' or set it to " +
            std::to_string(dim),
        "dimensions");
  f.string("user");  // type-checked, otherwise unused
  const json* in = f.get("input");
  if (!in) bad("'input' is required", "input");
  if (in->is_string() && in->get_ref<const std::string&>().empty())
    bad("'input' must not be an empty string", "input");
  if (in->is_array() && in->empty()) bad("'input' must not be an empty list", "input");
  if (in->is_array() && in->size() > kMaxEmbeddingInputs)
    bad("'input' has " + std::to_string(in->size()) + " entries; at most " +
            std::to_string(kMaxEmbeddingInputs) + " per request",
        "input");
  if (in->is_array())
    for (const json& e : *in)
      if ((e.is_string() && e.get_ref<const std::string&>().empty()) || (e.is_array() && e.empty()))
        bad("'input' must not hold an empty string or an empty list of token ids", "input");
  // The same shapes as a completion's prompt (string, token ids, lists of either), with no
  // completion to make room for.
  const json as_prompt = {{"prompt", *in}};
  const int64_t want = 0;
  std::vector<std::vector<int32_t>> inputs;
  try {
    inputs = completion_prompts(Fields(as_prompt), ctx, want, kMaxEmbeddingInputs);
  } catch (ApiError& e) {
    // Named as this endpoint names it.
    if (e.param == "prompt") e.param = "input";
    for (size_t at; (at = e.message.find("'prompt'")) != std::string::npos;)
      e.message.replace(at, 8, "'input'");
    throw;
  }
  // Each input is a sequence of the engine's queue, queued together.
  if (inputs.size() > static_cast<size_t>(ctx.max_waiting))
    bad("'input' has " + std::to_string(inputs.size()) +
            " entries but this server queues at most " + std::to_string(ctx.max_waiting) +
            " (--max-waiting); send fewer per request",
        "input");
  for (auto& ids : inputs)
    if (static_cast<int64_t>(ids.size()) > ctx.max_model_len)
      context_too_long(ctx.max_model_len, static_cast<int64_t>(ids.size()), 0, false, "input");
  r.inputs = std::move(inputs);
  return r;
}

size_t longest_token_bytes(const engine::Tokenizer& tok) {
  size_t longest = 4;
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    longest = std::max({longest, tok.token_text(id).size(), tok.piece(id, -1).size()});
  return longest;
}

std::vector<int32_t> parse_detokenize_request(Fields& f, const engine::Tokenizer& tok) {
  const json* t = f.get("tokens");
  if (!t || !t->is_array()) bad("'tokens' must be a list of token ids", "tokens");
  std::vector<int32_t> ids;
  for (auto& v : *t) {
    if (!v.is_number_integer()) bad("'tokens' must be a list of integers", "tokens");
    const auto id = as_int64(v);
    if (!id || *id < 0 || *id >= tok.vocab_size())
      bad("token id " + v.dump() + " is outside the vocabulary", "tokens");
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

namespace {

std::string text_of(const engine::Tokenizer& tok, int32_t id) {
  return id >= 0 ? std::string(tok.token_text(id)) : std::string();
}

// Parses, and renders a one-message chat (what every template must take), or throws jinja::Error.
void check_usable(const std::string& source, const engine::Tokenizer& tok) {
  engine::ChatTemplate(source, text_of(tok, tok.bos_id()), text_of(tok, tok.eos_id()))
      .render({{"user", "Hello"}}, true);
}

}  // namespace

ChosenChatTemplate choose_chat_template(const std::optional<std::string>& chat_template,
                                        const engine::Tokenizer& tok) {
  if (chat_template) {
    const std::string& t = *chat_template;
    if (const auto f = value_named(t, engine::kChatFormatNames))
      return {std::string(engine::builtin_chat_template(*f)),
              "built-in " + t + " (--chat-template)"};
    std::error_code ec;
    if (!std::filesystem::exists(t, ec))
      throw std::runtime_error("--chat-template '" + t + "' is not a built-in template (" +
                               names_of(engine::kChatFormatNames) + ") and not a file");
    std::string text = read_bounded_file(t, file_kinds::kChatTemplate);
    try {
      check_usable(text, tok);
    } catch (const engine::jinja::Error& e) {
      throw std::runtime_error("--chat-template " + t + ": " + e.what());
    }
    return {std::move(text), "file " + t + " (--chat-template)"};
  }
  std::string why = "the model has none";
  if (!tok.chat_template().empty()) {
    try {
      check_usable(tok.chat_template(), tok);
      return {tok.chat_template(), "the model's"};
    } catch (const engine::jinja::Error& e) {
      why = std::string("the model's cannot be used: ") + e.what() +
            "; give one with --chat-template";
    }
  }
  const engine::ChatFormat f = tok.token_id("<|start_header_id|>") >= 0 ? engine::ChatFormat::Llama3
                               : tok.token_id("<|im_start|>") >= 0      ? engine::ChatFormat::ChatML
                                                                   : engine::ChatFormat::Llama2;
  return {std::string(engine::builtin_chat_template(f)),
          "built-in " + std::string(name_of(f, engine::kChatFormatNames)) + " (" + why + ")"};
}

std::string describe(const ChosenChatTemplate& chosen) {
  // FNV-1a: a short fingerprint to tell templates apart in logs.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : chosen.source) h = (h ^ c) * 1099511628211ull;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(h));
  std::string first = chosen.source.substr(0, chosen.source.find('\n'));
  if (first.size() > 60) first = first.substr(0, 57) + "...";
  return chosen.origin + ", " + std::to_string(chosen.source.size()) + " bytes, fnv " + hash +
         ": " + first;
}

engine::ChatTemplate make_chat_template(const ChosenChatTemplate& chosen,
                                        const engine::Tokenizer& tok) {
  return engine::ChatTemplate(chosen.source, text_of(tok, tok.bos_id()),
                              text_of(tok, tok.eos_id()));
}

}  // namespace sandwich::server
