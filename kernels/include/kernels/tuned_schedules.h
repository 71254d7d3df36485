#pragma once
// Tuned schedules: for each GEMM shape key (per-rank N and K, weight type, threads, gate/up pair)
// the M ranges a tuner measured and the schedule that won on each. The weight type is the
// matrix's own: bf16, f32, or a quantized block type (q4_k, q6_k, ...), whose GEMMs run the
// quantized schedules (default_quant_schedule's fields). Installed once per process
// (before the executor forks its ranks, so they inherit it); gemm() and gemm_silu_mul() then
// run the table's schedule for an M it covers and the cost model's default otherwise.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/schedule.h"

namespace sandwich::kernels {

struct GemmKey {
  int64_t n = 0, k = 0;  // one rank's output and input columns
  DType weights = DType::BF16;
  int threads = 1;
  bool pair = false;  // gemm_silu_mul's gate/up pair
  // Set for quantized weights (GemmShape::qtype); weights is then BF16.
  std::optional<QType> qtype;
  bool operator==(const GemmKey&) const = default;
  std::string to_string() const;  // "N=2048 K=5504 bf16 threads=2" (+ " pair"); "... q4_k ..."
};
GemmKey key_of(const GemmShape& s);
// The key's GEMM at one M (not batch-invariant).
GemmShape shape_at(const GemmKey& key, int64_t m);

// A key's weight type as tables write it: "f32", "bf16" or a quantized type's name ("q4_k").
std::string weight_type_name(const GemmKey& key);
// Sets key.weights and key.qtype from such a name (any case); false if it names no type a GEMM
// runs (f16 weights are packed as BF16).
bool set_weight_type(GemmKey& key, std::string_view name);

struct TunedRange {
  int64_t m_lo = 1, m_hi = 1;  // inclusive
  Schedule schedule;
};

class TunedSchedules {
 public:
  TunedSchedules();
  ~TunedSchedules();
  TunedSchedules(TunedSchedules&&) noexcept;
  TunedSchedules& operator=(TunedSchedules&&) noexcept;

  // Throws std::invalid_argument naming the key and range when the schedule fails
  // validate_schedule for the key, m_lo > m_hi, m_lo < 1, or the range overlaps one already
  // added for the key. Ranges may be added in any order.
  void add(const GemmKey& key, int64_t m_lo, int64_t m_hi, const Schedule& schedule);
  // The same for a schedule as text (Schedule::to_string's form), parsed here: a table read
  // from a file holds its schedules parsed once. One that does not parse throws the same way.
  void add(const GemmKey& key, int64_t m_lo, int64_t m_hi, const std::string& schedule);
  // The schedule for this shape's M, or nullptr when the table has none. Batch-invariant float
  // shapes get nullptr: their one-set kernels were not what the tuner measured. (Quantized ones
  // do not: their integer kernels are the same in both modes, and quant_gemm.cpp replaces a
  // BF16-unpacking schedule in a batch-invariant call.)
  const Schedule* find(const GemmShape& s) const;
  bool has_key(const GemmKey& key) const;
  size_t keys() const;
  size_t ranges() const;
  std::vector<GemmKey> all_keys() const;
  const std::vector<TunedRange>* ranges_of(const GemmKey& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Makes `table` the process's tuned schedules (nullptr: none, the cost model for everything).
// on_miss runs once per shape key that a GEMM asks for and the table lacks (a GEMM of a key the
// table has but at an M outside its ranges also counts), from the calling thread; it must not
// call gemm. Not thread-safe against concurrent gemm() calls: install before serving.
void install_tuned_schedules(std::shared_ptr<const TunedSchedules> table,
                             std::function<void(const GemmKey&)> on_miss = {});
const TunedSchedules* installed_tuned_schedules();

// The schedule gemm() runs when the caller passes none: the installed table's for this M, else
// default_schedule(s). Costs a hash lookup and a binary search.
Schedule planned_schedule(const GemmShape& s);
// The same for a GEMM of quantized weights: the table's entry for its quantized type, else
// default_quant_schedule(s).
Schedule planned_schedule(const QuantShape& s);

// Identifies the micro-kernel table and driver a schedule was measured with: a table tuned
// against another version is another machine's. Changes when kernels or the driver change.
std::string kernels_version();

}  // namespace sandwich::kernels
