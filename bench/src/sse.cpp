#include "bench/sse.h"

namespace sandwich::bench {

void SseParser::feed(std::string_view bytes, const OnData& on_data) {
  for (char c : bytes) {
    // A line ends at CR, LF or CRLF; the LF of a CRLF split across two reads must not end a
    // second (empty) line, which would dispatch an event early.
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      line(on_data);
      continue;
    }
    line_ += c;
  }
}

void SseParser::line(const OnData& on_data) {
  if (line_.empty()) {
    if (has_data_) on_data(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  const size_t colon = line_.find(':');
  if (colon != 0) {  // a leading colon marks a comment
    const std::string_view field = std::string_view(line_).substr(0, colon);
    if (field == "data") {
      std::string_view value = colon == std::string::npos
                                   ? std::string_view()
                                   : std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (has_data_) data_ += '\n';
      data_ += value;
      has_data_ = true;
    }
  }
  line_.clear();
}

void SseParser::finish(const OnData& on_data) {
  if (!line_.empty()) line(on_data);
  if (has_data_) on_data(data_);
  data_.clear();
  has_data_ = false;
  after_cr_ = false;
}

}  // namespace sandwich::bench
