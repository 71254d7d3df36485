#include "tool_call_json.h"

namespace sandwich::server {

size_t json_container_end(std::string_view text, size_t pos) {
  if (pos >= text.size() || (text[pos] != '{' && text[pos] != '[')) return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxCallJsonDepth) return std::string_view::npos;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<nlohmann::ordered_json> json_at(std::string_view text, size_t pos, size_t end) {
  if (pos > end || end > text.size()) return std::nullopt;
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(text.substr(pos, end - pos), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::optional<ToolCall> call_of(const nlohmann::ordered_json& j) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  if (args == j.end()) return std::nullopt;
  // The two keys, or anything but the call's, make it something else that happens to have a name.
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "arguments" && it.key() != "parameters" &&
        it.key() != "id" && it.key() != "type")
      return std::nullopt;
  nlohmann::ordered_json a = *args;
  if (a.is_string()) {
    a = nlohmann::ordered_json::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (a.is_discarded()) return std::nullopt;
  }
  if (!a.is_object()) return std::nullopt;
  return ToolCall{name->get<std::string>(), a.dump()};
}

size_t partial_marker_start(std::string_view text, std::string_view marker) {
  const size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return text.size() - n;
  return std::string_view::npos;
}

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\t' || text[pos] == '\r'))
    ++pos;
  return pos;
}

bool all_space(std::string_view text) {
  return skip_space(text, 0) == text.size();
}

}  // namespace sandwich::server
