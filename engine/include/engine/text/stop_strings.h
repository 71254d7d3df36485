#pragma once
// Stop strings on streamed text: text that could still be the start of a stop string is held
// back, so a client never sees part of a stop string; the stop string itself is not emitted.
#include <string>
#include <string_view>
#include <vector>

namespace sandwich::engine {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Adds generated text. Returns the text that is now safe to emit; sets stopped() when a stop
  // string completed (the text before it is emitted, the rest dropped). With may_stop false
  // (before min_tokens) nothing matches: everything held so far is emitted.
  std::string push(std::string_view text, bool may_stop = true);
  // End of generation: what is still held back.
  std::string flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace sandwich::engine
