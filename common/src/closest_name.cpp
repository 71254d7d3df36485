#include "closest_name.h"

#include <algorithm>

namespace sandwich {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string> closest_name(const std::string& word,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = 0;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (!best || d < best_d) best = c, best_d = d;
  }
  // A third of the word may be wrong (at least two letters): "--modle", "--temprature".
  if (best && best_d <= std::max<size_t>(2, word.size() / 3) && best_d < word.size()) return best;
  return std::nullopt;
}

}  // namespace sandwich
