#pragma once
// Tuned parameters of the hand-written tunable kernels (attention block sizes): per kernel name
// and shape key (head_dim, group, threads, ...) the M ranges a tuner measured and the parameters
// that won on each. Installed once per process before serving (the engine's schedule table);
// a kernel asks kernel_params() and uses its own defaults when it gets nullptr.
#include <cstdint>
#include <map>
#include <string>

#include "kernels/m_ranges.h"

namespace sandwich::kernels {

using KernelParams = std::map<std::string, int64_t>;

struct KernelParamRange {
  int64_t m_lo = 1, m_hi = 1;  // inclusive
  KernelParams params;
};

// Parameters by kernel, key and range of M, built whole before it is installed: a table can be
// checked entry by entry without touching what the process runs.
class KernelParamTable {
 public:
  // Adds the parameters for M in [m_lo, m_hi] and returns ""; or, when m_lo < 1, m_lo > m_hi or
  // the range overlaps one of the same kernel and key, adds nothing and returns why
  // (MRanges::conflict's words).
  std::string add(const std::string& kernel, const KernelParams& key, int64_t m_lo, int64_t m_hi,
                  KernelParams params);
  const KernelParams* find(const std::string& kernel, const KernelParams& key, int64_t m) const;
  bool empty() const { return by_kernel_.empty(); }

 private:
  // Two levels so that a lookup copies neither the name nor the key.
  std::map<std::string, std::map<KernelParams, MRanges<KernelParamRange>>> by_kernel_;
};

// "kernel parameters for attention_decode group=2 head_dim=64 M 1..16": how errors name a range.
std::string kernel_params_text(const std::string& kernel, const KernelParams& key, int64_t m_lo,
                               int64_t m_hi);

// Adds the parameters for M in [m_lo, m_hi] (inclusive). Throws std::invalid_argument naming the
// kernel, key and range when KernelParamTable::add refuses it beside those installed. Not
// thread-safe against other installs; lookups running beside it see the registry before or
// after it.
void install_kernel_params(std::string kernel, KernelParams key, int64_t m_lo, int64_t m_hi,
                           KernelParams params);
// Replaces every installed parameter by `table`'s.
void install_kernel_params(KernelParamTable table);
// The parameters installed for this kernel, key and M, or nullptr. The pointer stays valid for
// the life of the process. No lock: cheap enough for every kernel call.
const KernelParams* kernel_params(const std::string& kernel, const KernelParams& key, int64_t m);
// Drops every installed parameter (kernels go back to their defaults).
void clear_kernel_params();

}  // namespace sandwich::kernels
