#pragma once
// A chat request's tool fields (tools, tool_choice, parallel_tool_calls; the legacy functions and
// function_call are refused), checked: every mistake is a 400 naming the field.
#include <string>

#include <nlohmann/json.hpp>

#include "request_fields.h"

namespace sandwich::server {

enum class ToolChoice { None, Auto, Required, Named };

struct ToolRequest {
  // The tools as given (for the chat template); null when none were given or the list is empty.
  nlohmann::ordered_json tools;
  // Default: auto when there are tools, else none (as OpenAI).
  ToolChoice choice = ToolChoice::None;
  std::string function;  // Named: the function to call
  bool parallel = true;  // parallel_tool_calls
};

// Reads the fields through the body's `f`, so that they count as known.
ToolRequest parse_tool_request(const Fields& f);

}  // namespace sandwich::server
