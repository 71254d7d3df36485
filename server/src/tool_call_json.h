#pragma once
// The pieces of JSON the tool-call parsers share: finding where a JSON object or array written by
// a model ends, and reading {"name": ..., "arguments" | "parameters": {...}} as a call.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool_call.h"

namespace sandwich::server {

// Deepest nesting of a call's JSON: deeper text is no call (and never reaches the recursive
// parts of the JSON library), as request bodies are limited.
inline constexpr int kMaxCallJsonDepth = 64;

// The end (one past the closing bracket) of the object or array opening at text[pos], or npos
// when it is not closed within `text` or nests deeper than kMaxCallJsonDepth. Brackets inside
// strings are skipped; the text between is not checked (json_at does that).
size_t json_container_end(std::string_view text, size_t pos);

// The JSON value of text[pos, end), or none when it is not valid JSON.
std::optional<nlohmann::ordered_json> json_at(std::string_view text, size_t pos, size_t end);

// A call from {"name": "f", <args_key>: {...}}; the other key of "arguments" and "parameters" is
// taken too (models mix them up). Arguments given as a string holding a JSON object are taken as
// that object. None when the shape is not a call.
std::optional<ToolCall> call_of(const nlohmann::ordered_json& j);

// Where in `text` a suffix starts that is a proper prefix of `marker` (it may become the marker
// once more text comes), or npos.
size_t partial_marker_start(std::string_view text, std::string_view marker);

size_t skip_space(std::string_view text, size_t pos);
bool all_space(std::string_view text);

}  // namespace sandwich::server
