#include "tool_call_json.h"
#include "tool_call_parsers.h"

namespace sandwich::server {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

// One or more calls separated by ';' and nothing else; none when any part is not a call.
std::optional<std::vector<ToolCall>> calls_of(std::string_view s) {
  std::vector<ToolCall> calls;
  size_t pos = skip_space(s, 0);
  while (pos < s.size()) {
    const size_t end = json_container_end(s, pos);
    if (end == std::string_view::npos) return std::nullopt;
    const auto j = json_at(s, pos, end);
    const auto call = j ? call_of(*j) : std::nullopt;
    if (!call) return std::nullopt;
    calls.push_back(*call);
    pos = skip_space(s, end);
    if (pos < s.size()) {
      if (s[pos] != ';') return std::nullopt;
      pos = skip_space(s, pos + 1);
    }
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

class Llama3JsonParser final : public ToolCallParser {
 public:
  size_t settled(std::string_view text, size_t from) const override {
    if (from == 0) {
      const size_t first = skip_space(text, 0);
      // Nothing yet, or an output opening with '{': it may be all calls, known only at its end.
      if (first == text.size() || text[first] == '{') return 0;
    }
    if (const size_t tag = text.find(kPythonTag, from); tag != std::string_view::npos) return tag;
    const size_t partial = partial_marker_start(text, kPythonTag);
    return partial == std::string_view::npos ? text.size() : partial;
  }

  ParsedOutput parse(std::string_view text, bool at_start) const override {
    if (const size_t tag = text.find(kPythonTag); tag != std::string_view::npos) {
      if (auto calls = calls_of(text.substr(tag + kPythonTag.size())))
        return {std::string(text.substr(0, tag)), std::move(*calls)};
    } else if (at_start && skip_space(text, 0) < text.size() && text[skip_space(text, 0)] == '{') {
      if (auto calls = calls_of(text)) return {{}, std::move(*calls)};
    }
    return {std::string(text), {}};
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_llama3_json_parser() {
  return std::make_unique<Llama3JsonParser>();
}

}  // namespace sandwich::server
