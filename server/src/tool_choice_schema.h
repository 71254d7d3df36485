#pragma once
// The JSON Schema a forced tool choice constrains the output to, as vLLM builds it: "required"
// -> a list of {"name": <a declared function>, "parameters": <its parameters>} (one at most
// without parallel_tool_calls); a named function -> its parameters object.
#include <nlohmann/json.hpp>

#include "tool_request.h"

namespace sandwich::server {

// For ToolChoice::Required and ToolChoice::Named only.
nlohmann::json tool_choice_schema(const ToolRequest& r);

}  // namespace sandwich::server
