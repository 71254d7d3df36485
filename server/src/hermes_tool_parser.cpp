#include "tool_call_json.h"
#include "tool_call_parsers.h"

namespace sandwich::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

// The call inside one block (its JSON with any space around it), or none.
std::optional<ToolCall> block_call(std::string_view inner) {
  const size_t pos = skip_space(inner, 0);
  const size_t end = json_container_end(inner, pos);
  if (end == std::string_view::npos || !all_space(inner.substr(end))) return std::nullopt;
  const auto j = json_at(inner, pos, end);
  return j ? call_of(*j) : std::nullopt;
}

class HermesParser final : public ToolCallParser {
 public:
  size_t settled(std::string_view text, size_t from) const override {
    size_t pos = from;
    while (true) {
      const size_t open = text.find(kOpen, pos);
      if (open == std::string_view::npos) break;
      const size_t close = text.find(kClose, open + kOpen.size());
      if (close == std::string_view::npos) return open;  // a block still being written
      pos = close + kClose.size();
    }
    const size_t partial = partial_marker_start(text.substr(pos), kOpen);
    return partial == std::string_view::npos ? text.size() : pos + partial;
  }

  ParsedOutput parse(std::string_view text, bool) const override {
    ParsedOutput out;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t open = text.find(kOpen, pos);
      if (open == std::string_view::npos) break;
      out.content += text.substr(pos, open - pos);
      const size_t inner = open + kOpen.size();
      const size_t close = text.find(kClose, inner);
      // An output may end right after a call's JSON, its closing tag never written.
      const size_t inner_end = close == std::string_view::npos ? text.size() : close;
      const size_t next = close == std::string_view::npos ? text.size() : close + kClose.size();
      if (auto call = block_call(text.substr(inner, inner_end - inner)))
        out.calls.push_back(std::move(*call));
      else
        out.content += text.substr(open, next - open);
      pos = next;
    }
    if (pos < text.size()) out.content += text.substr(pos);
    return out;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser() {
  return std::make_unique<HermesParser>();
}

}  // namespace sandwich::server
