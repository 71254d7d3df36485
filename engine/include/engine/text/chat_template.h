#pragma once
// Chat templates: a model's Jinja template (or a built-in one) rendering messages to the text the
// model was trained on (special tokens as text, to be encoded with parse_special = true), as HF
// transformers' apply_chat_template does.
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "engine/text/jinja.h"

namespace sandwich::engine {

// The built-in templates, for models without one of their own.
enum class ChatFormat { Llama3, Llama2, ChatML };
// Their names, as --chat-template takes them.
inline constexpr EnumName<ChatFormat> kChatFormatNames[] = {
    {ChatFormat::Llama3, "llama3"}, {ChatFormat::Llama2, "llama2"}, {ChatFormat::ChatML, "chatml"}};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

// What apply_chat_template takes besides the messages.
struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // The request's tools as given (a list of {"type": "function", "function": {...}}); null: none,
  // and the template sees `tools` as none.
  nlohmann::ordered_json tools;
  // More variables for the template (a request's chat_template_kwargs, e.g. enable_thinking); an
  // object or null. Its keys must not be the ones render() sets (messages, tools,
  // add_generation_prompt, bos_token, eos_token, documents): kReservedChatTemplateKeys.
  nlohmann::ordered_json extra;
};

// The variables render() sets itself, which ChatRenderOptions::extra may not override.
inline constexpr const char* kReservedChatTemplateKeys[] = {
    "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token"};

// The Jinja source of a built-in format. Llama-3 and ChatML are their models' published
// templates (Llama-3 writing <|begin_of_text|> only when the tokenizer has a BOS); Llama-2 is
// Meta's, lenient: it neither insists on alternating roles nor drops a lone system prompt.
std::string_view builtin_chat_template(ChatFormat f);

class ChatTemplate {
 public:
  // bos/eos: the tokenizer's BOS and EOS texts (bos_token and eos_token; empty when it has none).
  // Throws jinja::Error when the source does not parse.
  ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token);

  // Throws jinja::Error: the template's own raise_exception (roles that do not alternate, a
  // system message it does not take) or a render error, with the message to show the client.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The messages as full JSON objects, as HF passes them: role, content (a string or null),
  // tool_calls, tool_call_id, name. Throws jinja::Error as above, and std::invalid_argument for
  // an `extra` that is not an object or sets a reserved key.
  std::string render(const nlohmann::ordered_json& messages,
                     const ChatRenderOptions& options) const;

 private:
  jinja::Template template_;
  std::string bos_, eos_;
};

// The template of tokenizer_config.json's "chat_template": a string, or of a list of named ones
// ([{"name": ..., "template": ...}]) the one named "default"; "" when it holds none.
std::string chat_template_of_config(const nlohmann::json& value);

// One render with a built-in template.
std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos, const std::string& eos);

}  // namespace sandwich::engine
