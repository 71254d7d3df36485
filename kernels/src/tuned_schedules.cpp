// The tuned-schedule table and the process's installed one. gemm() asks planned_schedule() on
// every call, so the lookup takes no lock: an atomic pointer to what install published, a hash
// lookup and a binary search. Only a miss (which then asks the cost model, itself behind a
// mutex) takes a lock, to report each missing key once.
#include "kernels/tuned_schedules.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "kernels/m_ranges.h"
#include "kernels/microkernel.h"

namespace sandwich::kernels {
namespace {

// Bump when the GEMM driver's loop order, packing or prefetching changes: a schedule measured
// against the old driver no longer says what is fastest, so tables tuned with it must be
// re-tuned (kernels_version() changes and the engine treats them as another machine's).
constexpr int kDriverVersion = 1;

struct KeyHash {
  size_t operator()(const GemmKey& k) const noexcept {
    uint64_t h = static_cast<uint64_t>(k.n) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(k.k) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= (static_cast<uint64_t>(k.weights) << 40) ^ (static_cast<uint64_t>(k.threads) << 8) ^
         static_cast<uint64_t>(k.pair);
    if (k.qtype) h ^= (static_cast<uint64_t>(*k.qtype) + 1) << 48;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

[[noreturn]] void refuse(const GemmKey& key, int64_t m_lo, int64_t m_hi, const std::string& why) {
  throw std::invalid_argument("tuned schedule for " + key.to_string() + " M " +
                              std::to_string(m_lo) + ".." + std::to_string(m_hi) + ": " + why);
}

struct Installed {
  std::shared_ptr<const TunedSchedules> table;
  std::function<void(const GemmKey&)> on_miss;
  std::mutex reported_mutex;
  std::unordered_set<GemmKey, KeyHash> reported;
};

// The atomic pointer is what gemm() reads; the shared_ptr owns it.
std::atomic<Installed*> g_installed{nullptr};
std::shared_ptr<Installed> g_owner;

void report_miss(Installed& in, const GemmKey& key) {
  if (!in.on_miss) return;
  {
    std::lock_guard lock(in.reported_mutex);
    if (!in.reported.insert(key).second) return;
  }
  in.on_miss(key);
}

}  // namespace

std::string GemmKey::to_string() const {
  std::string s = "N=" + std::to_string(n) + " K=" + std::to_string(k) + " " +
                  weight_type_name(*this) + " threads=" + std::to_string(threads);
  if (pair) s += " pair";
  return s;
}

GemmKey key_of(const GemmShape& s) {
  // A quantized key's weights are always BF16, so that keys from tables and GEMMs compare equal.
  return GemmKey{s.n, s.k, s.qtype ? DType::BF16 : s.weights, s.threads, s.pair, s.qtype};
}

GemmShape shape_at(const GemmKey& key, int64_t m) {
  return GemmShape{m, key.n, key.k, key.weights, key.threads, key.pair, false, key.qtype};
}

std::string weight_type_name(const GemmKey& key) {
  return std::string(key.qtype ? qtype_info(*key.qtype).name : dtype_name(key.weights));
}

bool set_weight_type(GemmKey& key, std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "f32" || lower == "bf16") {
    key.weights = lower == "f32" ? DType::F32 : DType::BF16;
    key.qtype.reset();
    return true;
  }
  const std::optional<QType> q = qtype_from_name(lower);
  if (!q) return false;
  key.weights = DType::BF16;
  key.qtype = q;
  return true;
}

struct TunedSchedules::Impl {
  std::unordered_map<GemmKey, MRanges<TunedRange>, KeyHash> by_key;
  size_t ranges = 0;
};

TunedSchedules::TunedSchedules() : impl_(std::make_unique<Impl>()) {}
TunedSchedules::~TunedSchedules() = default;
TunedSchedules::TunedSchedules(TunedSchedules&&) noexcept = default;
TunedSchedules& TunedSchedules::operator=(TunedSchedules&&) noexcept = default;

void TunedSchedules::add(const GemmKey& key, int64_t m_lo, int64_t m_hi, const Schedule& schedule) {
  if (const std::string why = m_range_problem(m_lo, m_hi); !why.empty())
    refuse(key, m_lo, m_hi, why);
  if (key.n < 1 || key.k < 1 || key.threads < 1)
    refuse(key, m_lo, m_hi, "N, K and threads must be positive");
  try {
    validate_schedule(shape_at(key, m_lo), schedule);
  } catch (const std::invalid_argument& e) {
    refuse(key, m_lo, m_hi, e.what());
  }
  auto& ranges = impl_->by_key[key_of(shape_at(key, m_lo))];
  if (const std::string why = ranges.add(TunedRange{m_lo, m_hi, schedule}); !why.empty())
    refuse(key, m_lo, m_hi, why);
  ++impl_->ranges;
}

void TunedSchedules::add(const GemmKey& key, int64_t m_lo, int64_t m_hi,
                         const std::string& schedule) {
  Schedule parsed;
  try {
    parsed = parse_schedule(schedule);
  } catch (const std::invalid_argument& e) {
    refuse(key, m_lo, m_hi, e.what());
  }
  add(key, m_lo, m_hi, parsed);
}

const Schedule* TunedSchedules::find(const GemmShape& s) const {
  if (s.batch_invariant && !s.qtype) return nullptr;
  const auto it = impl_->by_key.find(key_of(s));
  if (it == impl_->by_key.end()) return nullptr;
  const TunedRange* r = it->second.find(s.m);
  return r ? &r->schedule : nullptr;
}

bool TunedSchedules::has_key(const GemmKey& key) const {
  return impl_->by_key.count(key_of(shape_at(key, 1))) != 0;
}
size_t TunedSchedules::keys() const {
  return impl_->by_key.size();
}
size_t TunedSchedules::ranges() const {
  return impl_->ranges;
}
std::vector<GemmKey> TunedSchedules::all_keys() const {
  std::vector<GemmKey> keys;
  keys.reserve(impl_->by_key.size());
  for (const auto& [key, ranges] : impl_->by_key) keys.push_back(key);
  std::sort(keys.begin(), keys.end(), [](const GemmKey& a, const GemmKey& b) {
    return std::tie(a.n, a.k, a.weights, a.qtype, a.threads, a.pair) <
           std::tie(b.n, b.k, b.weights, b.qtype, b.threads, b.pair);
  });
  return keys;
}
const std::vector<TunedRange>* TunedSchedules::ranges_of(const GemmKey& key) const {
  const auto it = impl_->by_key.find(key_of(shape_at(key, 1)));
  return it == impl_->by_key.end() ? nullptr : &it->second.all();
}

void install_tuned_schedules(std::shared_ptr<const TunedSchedules> table,
                             std::function<void(const GemmKey&)> on_miss) {
  std::shared_ptr<Installed> next;
  if (table) {
    next = std::make_shared<Installed>();
    next->table = std::move(table);
    next->on_miss = std::move(on_miss);
  }
  g_installed.store(next.get(), std::memory_order_release);
  g_owner = std::move(next);
}

const TunedSchedules* installed_tuned_schedules() {
  const Installed* in = g_installed.load(std::memory_order_acquire);
  return in ? in->table.get() : nullptr;
}

Schedule planned_schedule(const GemmShape& s) {
  Installed* in = g_installed.load(std::memory_order_acquire);
  if (in) {
    if (const Schedule* tuned = in->table->find(s)) return *tuned;
    if (!s.batch_invariant || s.qtype) report_miss(*in, key_of(s));
  }
  return default_schedule(s);
}

Schedule planned_schedule(const QuantShape& s) {
  return planned_schedule(gemm_shape_of(s));
}

std::string kernels_version() {
  // FNV-1a over the driver version and every compiled micro-kernel's name and register use.
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&](const std::string& text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= 0xff;
    h *= 0x100000001b3ull;
  };
  mix("driver " + std::to_string(kDriverVersion));
  for (const MicroKernel& mk : microkernel_table())
    mix(mk.name() + " " + std::to_string(mk.registers) + " " + std::to_string(mk.acc_sets));
  char text[32];
  std::snprintf(text, sizeof text, "d%d-%012llx", kDriverVersion,
                static_cast<unsigned long long>(h >> 16));
  return text;
}

}  // namespace sandwich::kernels
