#pragma once
// A choice's output, as the engine produces it, into content and tool calls for the client: text
// that may still turn out to be a call is held back, so no call markup leaks into the content,
// and each call goes out once it is complete, with its id and index.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool_call.h"

namespace sandwich::server {

class ToolCallStream {
 public:
  explicit ToolCallStream(const ToolCallParsing& parsing);
  ~ToolCallStream();

  struct Step {
    std::string content;        // new content
    nlohmann::json tool_calls;  // new complete calls, OpenAI's shape with "index"; [] when none
  };
  Step push(std::string_view text);
  // The output is complete: everything still held back is settled.
  Step finish();
  // Whether any call went out (the finish reason is then "tool_calls").
  bool made_calls() const { return calls_ > 0; }

 private:
  Step take(size_t settled);

  std::unique_ptr<ToolCallParser> parser_;
  bool parallel_, short_ids_;
  std::string text_;  // the output so far
  size_t done_ = 0;   // bytes of text_ settled and passed on
  size_t calls_ = 0;
};

// A new call id: "call_" and 24 alphanumerics, or (short) 9 alphanumerics.
std::string new_tool_call_id(bool short_id);

}  // namespace sandwich::server
