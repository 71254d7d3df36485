#pragma once
// The fewest bytes that finish a parse: per grammar position, the shortest text from there to
// the end of its alternative (rule lengths by a fixpoint, since rules recurse), and per stack
// the sum over its frames. A byte-level vocabulary has a token for every byte, so a sentence
// whose shortest ending is B bytes can always be finished in B tokens: what lets a matcher
// keep a whole sentence within max_tokens.
#include <cstdint>
#include <vector>

#include "grammar/grammar_rules.h"

namespace sandwich::engine::grammar {

// No finite text: a rule that never ends (or an unreachable end).
inline constexpr int32_t kNoEnd = INT32_MAX / 4;

class CompletionLengths {
 public:
  explicit CompletionLengths(const Grammar::Impl& g);
  // The shortest text from element position pos to the end of its alternative.
  int32_t rest(int32_t pos) const { return rest_[pos]; }

 private:
  std::vector<int32_t> rest_;
};

}  // namespace sandwich::engine::grammar
