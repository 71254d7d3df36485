// Decode attention over a long context, F32 against BF16 KV cache: one token of every KV head of
// a layer, the layers taken in turn so that the cache streams from memory as in a decode step
// (a layer's K/V at 4k context is about the size of an L3). Google Benchmark; not a test.
//   build/bin/bench_attention --benchmark_repetitions=5 --benchmark_enable_random_interleaving
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "kernels/attention.h"

namespace sandwich::kernels {
namespace {

// Llama-1.3B's attention (16 KV heads of 128, MHA) over `layers` layers.
constexpr int32_t kHeads = 16, kHeadDim = 128, kLayers = 8;

void BM_DecodeAttention(benchmark::State& state) {
  const auto context = static_cast<int32_t>(state.range(0));
  const auto dtype = static_cast<DType>(state.range(1));
  const int32_t n_blocks = (context + kKVBlock - 1) / kKVBlock;
  const int64_t block = PagedKV::block_elements(kHeads, kHeadDim);
  const int64_t layer_elems = block * n_blocks;
  std::vector<uint8_t> storage(static_cast<size_t>(layer_elems * kLayers) * dtype_size(dtype));
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(1);
  std::shuffle(table.begin(), table.end(), rng);  // pages are scattered in a real cache
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<PagedKV> layers;
  std::vector<float> k(kHeads * kHeadDim), v(k.size());
  for (int l = 0; l < kLayers; ++l) {
    layers.push_back(
        {storage.data() + l * layer_elems * dtype_size(dtype), block, kHeads, kHeadDim, dtype});
    for (int32_t p = 0; p < context; ++p) {
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      kv_store(layers.back(), table.data(), p, 0, kHeads, k.data(), v.data());
    }
  }
  std::vector<float> q(kHeads * kHeadDim), out(q.size());
  for (auto& x : q) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  int l = 0;
  for (auto _ : state) {
    for (int32_t h = 0; h < kHeads; ++h)
      attention(layers[l], table.data(), h, q.data() + h * kHeadDim, kHeadDim, 1, 1, context - 1,
                scale, out.data() + h * kHeadDim, kHeadDim);
    benchmark::DoNotOptimize(out.data());
    l = (l + 1) % kLayers;
  }
  state.SetBytesProcessed(state.iterations() * layer_elems * int64_t(dtype_size(dtype)) * context /
                          (n_blocks * kKVBlock));
  state.SetLabel(std::string(dtype_name(dtype)));
}

BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"context", "dtype"})
    ->ArgsProduct({{512, 4096}, {static_cast<int>(DType::F32), static_cast<int>(DType::BF16)}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sandwich::kernels

BENCHMARK_MAIN();
