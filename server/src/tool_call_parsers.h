#pragma once
// The parsers of each format (one file each); make_tool_call_parser picks among them.
#include <memory>
#include <string>

#include "tool_call.h"

namespace sandwich::server {

// Llama 3.1/3.2: <|python_tag|> then calls, or an output that is nothing but calls, each
// {"name": ..., "parameters": {...}}, several separated by ';'.
std::unique_ptr<ToolCallParser> make_llama3_json_parser();
// Hermes, Qwen2.5: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number, with text
// between.
std::unique_ptr<ToolCallParser> make_hermes_parser();
// Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] after any text, or (tokenizer
// v11 and later) [TOOL_CALLS]name[ARGS]{...} for each call.
std::unique_ptr<ToolCallParser> make_mistral_parser();
// tool_choice required: the grammar's [{"name": ..., "parameters": {...}}, ...]; named: the
// grammar's arguments object of `function`.
std::unique_ptr<ToolCallParser> make_required_parser();
std::unique_ptr<ToolCallParser> make_named_parser(std::string function);

}  // namespace sandwich::server
