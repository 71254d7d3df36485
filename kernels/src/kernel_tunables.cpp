#include "kernels/kernel_tunables.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sandwich::kernels {
namespace {

// Copy on write: lookups read the current table without a lock; an install publishes a new
// one. Old tables are kept (a few small maps per process) so that returned pointers stay valid
// while another thread installs.
std::mutex g_install_mutex;
std::vector<std::unique_ptr<const KernelParamTable>> g_tables;
std::atomic<const KernelParamTable*> g_current{nullptr};

void publish(std::unique_ptr<const KernelParamTable> table) {
  g_current.store(table.get(), std::memory_order_release);
  g_tables.push_back(std::move(table));
}

}  // namespace

std::string KernelParamTable::add(const std::string& kernel, const KernelParams& key, int64_t m_lo,
                                  int64_t m_hi, KernelParams params) {
  // Checked before the lookup, which would leave an empty entry behind.
  if (std::string why = m_range_problem(m_lo, m_hi); !why.empty()) return why;
  return by_kernel_[kernel][key].add(KernelParamRange{m_lo, m_hi, std::move(params)});
}

const KernelParams* KernelParamTable::find(const std::string& kernel, const KernelParams& key,
                                           int64_t m) const {
  const auto by_kernel = by_kernel_.find(kernel);
  if (by_kernel == by_kernel_.end()) return nullptr;
  const auto by_key = by_kernel->second.find(key);
  if (by_key == by_kernel->second.end()) return nullptr;
  const KernelParamRange* r = by_key->second.find(m);
  return r ? &r->params : nullptr;
}

std::string kernel_params_text(const std::string& kernel, const KernelParams& key, int64_t m_lo,
                               int64_t m_hi) {
  std::string s = "kernel parameters for " + kernel;
  for (const auto& [name, value] : key) s += " " + name + "=" + std::to_string(value);
  return s + " M " + std::to_string(m_lo) + ".." + std::to_string(m_hi);
}

void install_kernel_params(std::string kernel, KernelParams key, int64_t m_lo, int64_t m_hi,
                           KernelParams params) {
  std::lock_guard lock(g_install_mutex);
  const KernelParamTable* current = g_current.load(std::memory_order_acquire);
  auto next =
      current ? std::make_unique<KernelParamTable>(*current) : std::make_unique<KernelParamTable>();
  if (const std::string why = next->add(kernel, key, m_lo, m_hi, std::move(params)); !why.empty())
    throw std::invalid_argument(kernel_params_text(kernel, key, m_lo, m_hi) + ": " + why);
  publish(std::move(next));
}

void install_kernel_params(KernelParamTable table) {
  std::lock_guard lock(g_install_mutex);
  publish(std::make_unique<const KernelParamTable>(std::move(table)));
}

const KernelParams* kernel_params(const std::string& kernel, const KernelParams& key, int64_t m) {
  const KernelParamTable* current = g_current.load(std::memory_order_acquire);
  if (!current || current->empty()) return nullptr;
  return current->find(kernel, key, m);
}

void clear_kernel_params() {
  install_kernel_params(KernelParamTable{});
}

}  // namespace sandwich::kernels
