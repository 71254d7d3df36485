#pragma once
// A model's output split into what it says (content) and the functions it calls. One parser per
// published format (tool_call_parsers.h); ToolCallStream runs one over streamed text.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_service.h"

namespace sandwich::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI sends it
};

struct ParsedOutput {
  std::string content;
  std::vector<ToolCall> calls;
};

// What a chat request's output is parsed as.
struct ToolCallParsing {
  enum class Kind {
    Off,       // no tools, or tool_choice none: all of it is content
    Format,    // tool_choice auto: the model's own format (`format`)
    Required,  // tool_choice required: a grammar-forced [{"name": ..., "parameters": {...}}, ...]
    Named,     // a named tool_choice: a grammar-forced arguments object of `function`
  };
  Kind kind = Kind::Off;
  ToolCallFormat format = ToolCallFormat::None;
  std::string function;    // Named
  bool parallel = true;    // false: a second call and any after it are dropped
  bool short_ids = false;  // 9 alphanumerics, as Mistral's templates insist; else "call_..."
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // Of the output so far, how many leading bytes are settled: whatever follows cannot change
  // whether they are content or calls. What may still become a call is held back. The first
  // `from` bytes were settled before (a marker cannot start there): only the rest is searched,
  // so that a long output costs linear time.
  virtual size_t settled(std::string_view text, size_t from) const = 0;
  // Settled text into content and calls; `at_start`: the text opens the output. Text that looks
  // like a call but does not parse stays content, as it was written.
  virtual ParsedOutput parse(std::string_view text, bool at_start) const = 0;
};

// The parser for `p` (Kind::Off: none, nullptr).
std::unique_ptr<ToolCallParser> make_tool_call_parser(const ToolCallParsing& p);

// The special tokens' texts that mark a call in `format` (e.g. <|python_tag|>), which the parser
// must see even when special tokens are dropped from the content.
std::vector<std::string> tool_call_markers(ToolCallFormat format);

}  // namespace sandwich::server
