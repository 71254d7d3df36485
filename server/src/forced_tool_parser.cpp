// The outputs of tool_choice required and named, which a grammar (tool_choice_schema.h) forces
// into JSON: nothing is content unless the grammar was cut short (max_tokens).
#include "tool_call_json.h"
#include "tool_call_parsers.h"

namespace sandwich::server {
namespace {

// The whole output as one JSON value, or none.
std::optional<nlohmann::ordered_json> whole_json(std::string_view text) {
  const size_t pos = skip_space(text, 0);
  const size_t end = json_container_end(text, pos);
  if (end == std::string_view::npos || !all_space(text.substr(end))) return std::nullopt;
  return json_at(text, pos, end);
}

class RequiredParser final : public ToolCallParser {
 public:
  size_t settled(std::string_view, size_t) const override { return 0; }
  ParsedOutput parse(std::string_view text, bool) const override {
    const auto j = whole_json(text);
    ParsedOutput out;
    if (j && j->is_array() && !j->empty())
      for (const auto& e : *j) {
        auto call = call_of(e);
        if (!call) return {std::string(text), {}};
        out.calls.push_back(std::move(*call));
      }
    if (out.calls.empty()) out.content = text;
    return out;
  }
};

class NamedParser final : public ToolCallParser {
 public:
  explicit NamedParser(std::string function) : function_(std::move(function)) {}
  size_t settled(std::string_view, size_t) const override { return 0; }
  ParsedOutput parse(std::string_view text, bool) const override {
    const auto j = whole_json(text);
    if (!j || !j->is_object()) return {std::string(text), {}};
    return {{}, {ToolCall{function_, j->dump()}}};
  }

 private:
  std::string function_;
};

}  // namespace

std::unique_ptr<ToolCallParser> make_required_parser() {
  return std::make_unique<RequiredParser>();
}
std::unique_ptr<ToolCallParser> make_named_parser(std::string function) {
  return std::make_unique<NamedParser>(std::move(function));
}

}  // namespace sandwich::server
