#include "tool_call_format.h"

namespace sandwich::server {

ChosenToolCallFormat choose_tool_call_format(ToolCallFormat option, std::string_view chat_template,
                                             const engine::Tokenizer& tok) {
  auto named = [](ToolCallFormat f, const std::string& why) {
    return ChosenToolCallFormat{f,
                                std::string(name_of(f, kToolCallFormatNames)) + " (" + why + ")"};
  };
  if (option != ToolCallFormat::Auto) return named(option, "--tool-call-parser");
  auto has = [&](std::string_view s) { return chat_template.find(s) != std::string_view::npos; };
  // The template first: it is what the model was trained to answer (a Llama-3 vocabulary serves
  // Hermes-style fine-tunes too).
  if (has("<tool_call>"))
    return named(ToolCallFormat::Hermes, "auto: the chat template writes <tool_call>");
  if (has("[TOOL_CALLS]"))
    return named(ToolCallFormat::Mistral, "auto: the chat template writes [TOOL_CALLS]");
  if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("tools")))
    return named(ToolCallFormat::Llama3Json, "auto: a Llama-3 chat template with tools");
  if (tok.token_id("<tool_call>") >= 0)
    return named(ToolCallFormat::Hermes, "auto: the tokenizer has <tool_call>");
  if (tok.token_id("[TOOL_CALLS]") >= 0)
    return named(ToolCallFormat::Mistral, "auto: the tokenizer has [TOOL_CALLS]");
  if (tok.token_id("<|python_tag|>") >= 0)
    return named(ToolCallFormat::Llama3Json, "auto: the tokenizer has <|python_tag|>");
  return named(ToolCallFormat::None,
               "auto: neither the chat template nor the tokenizer shows a tool-call format; "
               "tool_choice auto is refused, required and named work");
}

}  // namespace sandwich::server
