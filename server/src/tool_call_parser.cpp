#include "tool_call_parsers.h"

namespace sandwich::server {

std::unique_ptr<ToolCallParser> make_tool_call_parser(const ToolCallParsing& p) {
  using K = ToolCallParsing::Kind;
  switch (p.kind) {
    case K::Off:
      return nullptr;
    case K::Required:
      return make_required_parser();
    case K::Named:
      return make_named_parser(p.function);
    case K::Format:
      switch (p.format) {
        case ToolCallFormat::Llama3Json:
          return make_llama3_json_parser();
        case ToolCallFormat::Hermes:
          return make_hermes_parser();
        case ToolCallFormat::Mistral:
          return make_mistral_parser();
        default:
          return nullptr;
      }
  }
  return nullptr;
}

std::vector<std::string> tool_call_markers(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Llama3Json:
      return {"<|python_tag|>"};
    case ToolCallFormat::Hermes:
      return {"<tool_call>", "</tool_call>"};
    case ToolCallFormat::Mistral:
      return {"[TOOL_CALLS]"};
    default:
      return {};
  }
}

}  // namespace sandwich::server
