#pragma once
// Which of the published tool-call formats a served model writes, when --tool-call-parser is auto.
#include <string>
#include <string_view>

#include "engine/text/tokenizer.h"
#include "server/openai_service.h"

namespace sandwich::server {

struct ChosenToolCallFormat {
  ToolCallFormat format = ToolCallFormat::None;  // never Auto
  std::string
      origin;  // for the start-up log, e.g. "hermes (auto: the chat template writes <tool_call>)"
};

// `option` unless it is Auto. Auto: the marker the chat template writes into a conversation
// (<tool_call> -> hermes, [TOOL_CALLS] -> mistral, <|python_tag|> or a Llama-3 header with
// tools -> llama3_json), else the one the tokenizer has as a token, else none.
ChosenToolCallFormat choose_tool_call_format(ToolCallFormat option, std::string_view chat_template,
                                             const engine::Tokenizer& tok);

}  // namespace sandwich::server
