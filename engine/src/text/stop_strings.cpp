#include "engine/text/stop_strings.h"

#include <algorithm>
#include <utility>

namespace sandwich::engine {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) {
      max_len_ = std::max(max_len_, s.size());
      stops_.push_back(std::move(s));
    }
}

std::string StopStringMatcher::push(std::string_view text, bool may_stop) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty() || !may_stop) return std::exchange(held_, {});
  // Earliest complete match wins.
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    size_t at = held_.find(s);
    if (at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Keep the longest suffix that is a prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace sandwich::engine
