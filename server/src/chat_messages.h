#pragma once
// One message of a chat request, checked, as the chat template sees it (HF's shape): role,
// content, and where given name, tool_calls (arguments as an object) and tool_call_id.
#include <cstddef>

#include <nlohmann/json.hpp>

namespace sandwich::server {

// Throws ApiError 400 (param "messages") naming what is wrong. `content_bytes`: the bytes of its
// content text.
nlohmann::ordered_json template_message(const nlohmann::json& message, size_t& content_bytes);

}  // namespace sandwich::server
