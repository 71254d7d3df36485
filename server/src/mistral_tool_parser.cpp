#include "tool_call_json.h"
#include "tool_call_parsers.h"

namespace sandwich::server {
namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]", kArgs = "[ARGS]";

// Tokenizer v11 and later (Mistral Small 3.2, Magistral, Devstral): each call is
// [TOOL_CALLS]name[ARGS]{...}, one after another. `text` starts at the first marker.
std::optional<std::vector<ToolCall>> v11_calls(std::string_view text) {
  std::vector<ToolCall> calls;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!text.substr(pos).starts_with(kToolCalls)) return std::nullopt;
    pos += kToolCalls.size();
    const size_t args = text.find(kArgs, pos);
    if (args == std::string_view::npos) return std::nullopt;
    const std::string_view name = text.substr(pos, args - pos);
    if (name.empty() || name.find_first_of(" \t\n\"{}[]") != std::string_view::npos)
      return std::nullopt;
    pos = skip_space(text, args + kArgs.size());
    const size_t end = json_container_end(text, pos);
    const auto j = end == std::string_view::npos ? std::nullopt : json_at(text, pos, end);
    if (!j || !j->is_object()) return std::nullopt;
    calls.push_back({std::string(name), j->dump()});
    pos = skip_space(text, end);
  }
  return calls;
}

class MistralParser final : public ToolCallParser {
 public:
  size_t settled(std::string_view text, size_t from) const override {
    if (const size_t m = text.find(kToolCalls, from); m != std::string_view::npos) return m;
    const size_t partial = partial_marker_start(text, kToolCalls);
    return partial == std::string_view::npos ? text.size() : partial;
  }

  ParsedOutput parse(std::string_view text, bool) const override {
    const size_t m = text.find(kToolCalls);
    if (m == std::string_view::npos) return {std::string(text), {}};
    if (auto calls = v11_calls(text.substr(m))) return {std::string(text.substr(0, m)), *calls};
    const std::string_view rest = text.substr(m + kToolCalls.size());
    // A list of calls, or (some versions) one call alone; text after it stays content.
    const size_t pos = skip_space(rest, 0);
    const size_t end = json_container_end(rest, pos);
    const auto j = end == std::string_view::npos ? std::nullopt : json_at(rest, pos, end);
    ParsedOutput out{std::string(text.substr(0, m)), {}};
    if (j && j->is_array() && !j->empty()) {
      for (const auto& e : *j) {
        auto call = call_of(e);
        if (!call) return {std::string(text), {}};
        out.calls.push_back(std::move(*call));
      }
    } else if (auto call = j ? call_of(*j) : std::nullopt) {
      out.calls.push_back(std::move(*call));
    } else {
      return {std::string(text), {}};
    }
    if (!all_space(rest.substr(end))) out.content += rest.substr(end);
    return out;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_mistral_parser() {
  return std::make_unique<MistralParser>();
}

}  // namespace sandwich::server
