#pragma once
// The ranges of M of one key of a tuned table (GEMM schedules, tunable kernels' parameters):
// inclusive, of M >= 1, disjoint, kept sorted. The one rule by which a range may join such a
// table; conflict() asks it without adding anything, for a table checked but not installed.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sandwich::kernels {

// "" when m_lo..m_hi is a range of M a table may hold, else why not.
inline std::string m_range_problem(int64_t m_lo, int64_t m_hi) {
  return m_lo < 1 || m_lo > m_hi ? "not a range of M >= 1" : "";
}

// R holds int64_t m_lo, m_hi (inclusive) and what the range maps to.
template <class R>
class MRanges {
 public:
  // Why m_lo..m_hi may not join: m_range_problem's answer, or "overlaps M 4..8" naming the
  // lowest range it overlaps; "" when it may.
  std::string conflict(int64_t m_lo, int64_t m_hi) const {
    if (std::string why = m_range_problem(m_lo, m_hi); !why.empty()) return why;
    const auto at = first_ending_at_or_after(m_lo);
    if (at == ranges_.end() || at->m_lo > m_hi) return "";
    return "overlaps M " + std::to_string(at->m_lo) + ".." + std::to_string(at->m_hi);
  }
  // Adds `r` when conflict() allows it and returns ""; else adds nothing and returns why not.
  std::string add(R r) {
    std::string why = conflict(r.m_lo, r.m_hi);
    if (why.empty()) ranges_.insert(first_ending_at_or_after(r.m_lo), std::move(r));
    return why;
  }
  // The range holding M, or nullptr. A binary search: cheap enough for every kernel call.
  const R* find(int64_t m) const {
    const auto at = first_ending_at_or_after(m);
    return at != ranges_.end() && at->m_lo <= m ? &*at : nullptr;
  }
  const std::vector<R>& all() const { return ranges_; }

 private:
  // Disjoint and sorted, so the ends are sorted too.
  typename std::vector<R>::const_iterator first_ending_at_or_after(int64_t m) const {
    return std::partition_point(ranges_.begin(), ranges_.end(),
                                [m](const R& r) { return r.m_hi < m; });
  }

  std::vector<R> ranges_;
};

}  // namespace sandwich::kernels
