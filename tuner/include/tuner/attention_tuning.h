#pragma once
// Attention as a TunableKernel (kernels/attention_tunables.h names its parameters): prefill at
// M prompt tokens (a prompt from position 0, split into work items of q_chunk tokens per KV
// head as the forward pass splits it) and decode at M sequences of `decode_context` positions,
// each on its own pages; both on a thread team of a rank's threads taking items dynamically.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/formats/model_config.h"
#include "engine/plans/schedule_table.h"
#include "engine/runtime/kv_cache.h"
#include "tuner/tunable_kernel.h"

namespace sandwich::tuner {

struct AttentionShape {
  int32_t head_dim = 0;
  int32_t group = 1;     // query heads per KV head
  int32_t kv_heads = 1;  // one rank's
  int threads = 1;
  std::vector<int> cpus;  // the team's CPUs (empty: unpinned)
  // The KV cache's elements: the engine's default unless told (the table's key does not name
  // it; the block sizes only change the speed).
  engine::KVCacheDType kv_dtype = engine::kDefaultKVCacheDType;
};
// Shapes of one rank of `ranks` for a model config; throws std::invalid_argument when the
// ranks do not divide its KV heads.
AttentionShape attention_shape(const engine::ModelConfig& c, int ranks, int threads);

std::unique_ptr<TunableKernel> make_attention_prefill(const AttentionShape& s, int64_t max_m);
std::unique_ptr<TunableKernel> make_attention_decode(const AttentionShape& s, int64_t max_batch,
                                                     int32_t decode_context = 512);

struct AttentionTuneOptions {
  int64_t max_decode_batch = 64;  // decode M; prefill M goes to max_m
  int32_t decode_context = 512;
  KernelMeasureOptions measure;
  KernelSearchOptions search;
  KernelClock clock;  // empty: timed_runs(measure)
};
// attention_prefill (M = 1..max_m) and attention_decode (M = 1..max_decode_batch) for one rank of
// `ranks` with `threads` threads: the schedule table's tunables. `stop` and `progress` as in
// search_kernel; `stats` sums both searches.
std::vector<engine::TunedKernel> tune_attention(
    const engine::ModelConfig& c, int ranks, int threads, int64_t max_m,
    const std::function<bool()>& stop = {},
    const std::function<void(const KernelProgress&)>& progress = {},
    const AttentionTuneOptions& o = {}, KernelSearchStats* stats = nullptr);

}  // namespace sandwich::tuner
