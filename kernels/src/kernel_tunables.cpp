#include "kernels/kernel_tunables.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sandwich::kernels {
namespace {

using Params = std::map<std::string, int64_t>;

struct ParamRange {
  int64_t m_lo, m_hi;
  Params params;
};
// Kernel -> key -> ranges sorted by m_lo, not overlapping. Two levels so that a lookup copies
// neither the name nor the key.
using Registry = std::map<std::string, std::map<Params, std::vector<ParamRange>>>;

// Copy on write: lookups read the current registry without a lock; an install publishes a new
// one. Old registries are kept (a few small maps per process) so that returned pointers stay
// valid while another thread installs.
std::mutex g_install_mutex;
std::vector<std::unique_ptr<const Registry>> g_registries;
std::atomic<const Registry*> g_current{nullptr};

std::string describe(const std::string& kernel, const Params& key) {
  std::string s = kernel;
  for (const auto& [name, value] : key) s += " " + name + "=" + std::to_string(value);
  return s;
}

void publish(std::unique_ptr<const Registry> registry) {
  g_current.store(registry.get(), std::memory_order_release);
  g_registries.push_back(std::move(registry));
}

}  // namespace

void install_kernel_params(std::string kernel, Params key, int64_t m_lo, int64_t m_hi,
                           Params params) {
  const auto where = [&] {
    return describe(kernel, key) + " M " + std::to_string(m_lo) + ".." + std::to_string(m_hi);
  };
  if (m_lo < 1 || m_lo > m_hi)
    throw std::invalid_argument("kernel parameters for " + where() + ": not a range of M >= 1");
  std::lock_guard lock(g_install_mutex);
  const Registry* current = g_current.load(std::memory_order_acquire);
  auto next = current ? std::make_unique<Registry>(*current) : std::make_unique<Registry>();
  auto& ranges = (*next)[kernel][key];
  for (const ParamRange& r : ranges)
    if (r.m_lo <= m_hi && m_lo <= r.m_hi)
      throw std::invalid_argument("kernel parameters for " + where() + ": overlaps M " +
                                  std::to_string(r.m_lo) + ".." + std::to_string(r.m_hi));
  ParamRange added{m_lo, m_hi, std::move(params)};
  ranges.insert(std::upper_bound(ranges.begin(), ranges.end(), m_lo,
                                 [](int64_t m, const ParamRange& r) { return m < r.m_lo; }),
                std::move(added));
  publish(std::move(next));
}

const Params* kernel_params(const std::string& kernel, const Params& key, int64_t m) {
  const Registry* current = g_current.load(std::memory_order_acquire);
  if (!current || current->empty()) return nullptr;
  auto by_kernel = current->find(kernel);
  if (by_kernel == current->end()) return nullptr;
  auto by_key = by_kernel->second.find(key);
  if (by_key == by_kernel->second.end()) return nullptr;
  const auto& ranges = by_key->second;
  auto r = std::upper_bound(ranges.begin(), ranges.end(), m,
                            [](int64_t v, const ParamRange& x) { return v < x.m_lo; });
  if (r == ranges.begin()) return nullptr;
  --r;
  return m <= r->m_hi ? &r->params : nullptr;
}

void clear_kernel_params() {
  std::lock_guard lock(g_install_mutex);
  publish(std::make_unique<Registry>());
}

}  // namespace sandwich::kernels
