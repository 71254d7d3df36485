#pragma once
// "Did you mean ...?" for mistyped option and command names (private to common/).
#include <optional>
#include <string>
#include <vector>

namespace sandwich {

// The candidate nearest to `word` by edit distance, if it is near enough to be a likely typo.
std::optional<std::string> closest_name(const std::string& word,
                                        const std::vector<std::string>& candidates);

}  // namespace sandwich
