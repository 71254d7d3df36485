#include "tool_call_stream.h"

#include <random>

namespace sandwich::server {

std::string new_tool_call_id(bool short_id) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = short_id ? "" : "call_";
  for (int i = 0; i < (short_id ? 9 : 24); ++i) id += kChars[rng() % kChars.size()];
  return id;
}

ToolCallStream::ToolCallStream(const ToolCallParsing& parsing)
    : parser_(make_tool_call_parser(parsing)),
      parallel_(parsing.parallel),
      short_ids_(parsing.short_ids) {}

ToolCallStream::~ToolCallStream() = default;

ToolCallStream::Step ToolCallStream::push(std::string_view text) {
  text_ += text;
  if (!parser_) return take(text_.size());
  return take(parser_->settled(text_, done_));
}

ToolCallStream::Step ToolCallStream::finish() {
  return take(text_.size());
}

ToolCallStream::Step ToolCallStream::take(size_t settled) {
  Step s{{}, nlohmann::json::array()};
  if (settled <= done_) return s;
  const std::string_view part = std::string_view(text_).substr(done_, settled - done_);
  if (!parser_) {
    s.content = part;
  } else {
    ParsedOutput out = parser_->parse(part, done_ == 0);
    s.content = std::move(out.content);
    for (ToolCall& c : out.calls) {
      // As vLLM does without parallel_tool_calls: the first call only.
      if (!parallel_ && calls_ > 0) break;
      s.tool_calls.push_back({{"index", calls_++},
                              {"id", new_tool_call_id(short_ids_)},
                              {"type", "function"},
                              {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
  }
  done_ = settled;
  return s;
}

}  // namespace sandwich::server
