#include "grammar/completion_lengths.h"

#include <algorithm>

namespace sandwich::engine::grammar {

CompletionLengths::CompletionLengths(const Grammar::Impl& g) {
  const size_t n_rules = g.alternatives.size();
  std::vector<int32_t> rule(n_rules, kNoEnd);
  auto seq = [&](int32_t pos) {
    int64_t len = 0;
    for (; g.elements[pos].kind != Element::Kind::End && len < kNoEnd; ++pos)
      len += g.elements[pos].kind == Element::Kind::Terminal ? 1 : rule[g.elements[pos].value];
    return static_cast<int32_t>(std::min<int64_t>(len, kNoEnd));
  };
  // Lengths only fall, and each pass fixes at least one more rule: at most n_rules + 1 passes.
  for (size_t pass = 0; pass <= n_rules; ++pass) {
    bool changed = false;
    for (size_t r = 0; r < n_rules; ++r)
      for (int32_t start : g.alternatives[r]) {
        const int32_t len = seq(start);
        if (len < rule[r]) {
          rule[r] = len;
          changed = true;
        }
      }
    if (!changed) break;
  }
  // Backwards through each alternative: rest(pos) = length(element) + rest(pos + 1).
  rest_.assign(g.elements.size(), 0);
  for (size_t i = g.elements.size(); i-- > 0;) {
    const Element& e = g.elements[i];
    if (e.kind == Element::Kind::End) {
      rest_[i] = 0;
      continue;
    }
    const int64_t here = e.kind == Element::Kind::Terminal ? 1 : rule[e.value];
    rest_[i] = static_cast<int32_t>(std::min<int64_t>(here + rest_[i + 1], kNoEnd));
  }
}

}  // namespace sandwich::engine::grammar
