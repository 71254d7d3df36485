#pragma once
// How far two rankings of the same items agree.
#include <vector>

namespace sandwich::tuner {

// Kendall's tau-b between two orderings of the same items (1: same order, -1: reversed), from
// their scores a[i], b[i]. Fewer than two items, or all tied, give 1.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace sandwich::tuner
