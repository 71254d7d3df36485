#include "kernels/attention_tunables.h"

#include "kernels/kernel_tunables.h"

namespace sandwich::kernels {

namespace {

// A parameter from the table when it is there and in the kernel's range.
void take(const std::map<std::string, int64_t>& params, const char* name, int64_t lo, int64_t hi,
          int32_t& value) {
  const auto it = params.find(name);
  if (it != params.end() && it->second >= lo && it->second <= hi)
    value = static_cast<int32_t>(it->second);
}

AttentionPlan plan_of(const std::string& kernel, const std::map<std::string, int64_t>& key,
                      int64_t m) {
  AttentionPlan plan;
  if (m < 1) return plan;
  const std::map<std::string, int64_t>* params = kernel_params(kernel, key, m);
  if (!params) return plan;
  take(*params, "pass_rows", 1, kMaxPassRows, plan.kernel.pass_rows);
  take(*params, "kv_blocks", 1, kMaxStepBlocks, plan.kernel.kv_blocks);
  if (kernel == kAttentionPrefill) take(*params, "q_chunk", 1, 1 << 20, plan.q_chunk);
  return plan;
}

}  // namespace

std::map<std::string, int64_t> attention_key(int32_t head_dim, int32_t group, int32_t kv_heads,
                                             int threads) {
  return {{"head_dim", head_dim}, {"group", group}, {"kv_heads", kv_heads}, {"threads", threads}};
}

AttentionPlan attention_prefill_plan(const std::map<std::string, int64_t>& key, int64_t m) {
  static const std::string name = kAttentionPrefill;
  return plan_of(name, key, m);
}

AttentionPlan attention_decode_plan(const std::map<std::string, int64_t>& key, int64_t m) {
  static const std::string name = kAttentionDecode;
  return plan_of(name, key, m);
}

std::map<std::string, int64_t> attention_params_map(const std::string& kernel,
                                                    const AttentionPlan& plan) {
  if (kernel == kAttentionDecode) return {{"kv_blocks", plan.kernel.kv_blocks}};
  return {{"q_chunk", plan.q_chunk},
          {"pass_rows", plan.kernel.pass_rows},
          {"kv_blocks", plan.kernel.kv_blocks}};
}

}  // namespace sandwich::kernels
