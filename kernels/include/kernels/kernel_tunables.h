#pragma once
// Tuned parameters of the hand-written tunable kernels (attention block sizes): per kernel name
// and shape key (head_dim, group, threads, ...) the M ranges a tuner measured and the parameters
// that won on each. Installed once per process before serving (the engine's schedule table);
// a kernel asks kernel_params() and uses its own defaults when it gets nullptr.
#include <cstdint>
#include <map>
#include <string>

namespace sandwich::kernels {

// Adds the parameters for M in [m_lo, m_hi] (inclusive). Throws std::invalid_argument naming the
// kernel, key and range when m_lo < 1, m_lo > m_hi or the range overlaps one already installed
// for the same kernel and key. Not thread-safe against other installs; lookups running beside it
// see the registry before or after it.
void install_kernel_params(std::string kernel, std::map<std::string, int64_t> key, int64_t m_lo,
                           int64_t m_hi, std::map<std::string, int64_t> params);
// The parameters installed for this kernel, key and M, or nullptr. The pointer stays valid for
// the life of the process. No lock: cheap enough for every kernel call.
const std::map<std::string, int64_t>* kernel_params(const std::string& kernel,
                                                    const std::map<std::string, int64_t>& key,
                                                    int64_t m);
// Drops every installed parameter (kernels go back to their defaults).
void clear_kernel_params();

}  // namespace sandwich::kernels
