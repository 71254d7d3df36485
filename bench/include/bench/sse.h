#pragma once
// An incremental parser of server-sent events (text/event-stream): bytes arrive in arbitrary
// pieces, events come out whole. Only the data field matters to the benchmark; event, id,
// retry and comment lines are skipped.
#include <functional>
#include <string>
#include <string_view>

namespace sandwich::bench {

class SseParser {
 public:
  using OnData = std::function<void(const std::string& data)>;
  // Calls on_data for each event completed by these bytes (its data lines joined by '\n').
  void feed(std::string_view bytes, const OnData& on_data);
  // The stream ended: an event still missing its blank line is delivered too (some servers end
  // with "data: [DONE]\n" alone), a partial last line included.
  void finish(const OnData& on_data);

 private:
  void line(const OnData& on_data);
  std::string line_, data_;
  bool has_data_ = false, after_cr_ = false;
};

}  // namespace sandwich::bench
