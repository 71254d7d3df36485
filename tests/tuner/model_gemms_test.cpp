// A model's per-rank GEMM keys, as the forward pass shards them.
#include "tuner/model_gemms.h"

#include <gtest/gtest.h>

#include "engine/formats/model_config.h"

namespace sandwich::tuner {
namespace {

using kernels::DType;
using kernels::GemmKey;

TEST(ModelGemms, Llama13bOneRankHasFourDistinctShapes) {
  const engine::ModelConfig c = engine::load_preset("llama-1.3b");
  const auto keys = model_gemms(c, 1, 2, DType::BF16);
  const std::vector<GemmKey> want = {{2048, 2048, DType::BF16, 2, false},
                                     {5504, 2048, DType::BF16, 2, true},
                                     {2048, 5504, DType::BF16, 2, false},
                                     {32000, 2048, DType::BF16, 2, false}};
  EXPECT_EQ(keys, want);
}

TEST(ModelGemms, Llama13bTwoRanksShardColumnsAndRows) {
  const engine::ModelConfig c = engine::load_preset("llama-1.3b");
  const auto keys = model_gemms(c, 2, 1, DType::F32);
  // Heads 8 of 16 a rank: q/k/v 1024 columns, o 1024 input columns; FFN 86 panels: 43 each
  // (2752 columns); vocabulary 500 panels: 250 each.
  const std::vector<GemmKey> want = {{1024, 2048, DType::F32, 1, false},
                                     {2048, 1024, DType::F32, 1, false},
                                     {2752, 2048, DType::F32, 1, true},
                                     {2048, 2752, DType::F32, 1, false},
                                     {16000, 2048, DType::F32, 1, false}};
  EXPECT_EQ(keys, want);
}

TEST(ModelGemms, TheLmHeadKeysAreAmongThem) {
  const engine::ModelConfig c = engine::load_preset("llama-1.3b");
  EXPECT_EQ(lm_head_gemms(c, 1, 2, DType::BF16),
            (std::vector<GemmKey>{{32000, 2048, DType::BF16, 2, false}}));
  EXPECT_EQ(lm_head_gemms(c, 2, 1, DType::F32),
            (std::vector<GemmKey>{{16000, 2048, DType::F32, 1, false}}));
}

TEST(ModelGemms, UnevenShardsAndUnalignedHeadsAreEachRanksShape) {
  engine::ModelConfig c = engine::load_preset("llama-1.3b");
  c.n_heads = c.n_kv_heads = 6;
  c.head_dim = 48;  // rank 1's q columns start at 144: run panel-aligned from 128
  c.dim = 288;
  c.ffn_dim = 200;  // 4 panels: 2 each, rank 1 ends short at 200
  c.vocab_size = 300;
  const auto keys = model_gemms(c, 2, 2, DType::BF16);
  const auto has = [&](int64_t n, int64_t k, bool pair) {
    return std::find(keys.begin(), keys.end(), GemmKey{n, k, DType::BF16, 2, pair}) != keys.end();
  };
  EXPECT_TRUE(has(144, 288, false));  // rank 0's q, k, v
  EXPECT_TRUE(has(160, 288, false));  // rank 1's: columns [128, 288)
  EXPECT_TRUE(has(288, 144, false));  // o
  EXPECT_TRUE(has(128, 288, true));   // rank 0's gate/up
  EXPECT_TRUE(has(72, 288, true));    // rank 1's
  EXPECT_THROW(model_gemms(c, 4, 1, DType::BF16), std::invalid_argument);
}

GemmKey quant(int64_t n, int64_t k, kernels::QType t, int threads, bool pair) {
  GemmKey key{n, k, DType::BF16, threads, pair};
  key.qtype = t;
  return key;
}

// A quantized preset mixes types per tensor: each GEMM is keyed by its own matrix's type, and a
// gate/up pair of two types runs as two GEMMs (forward.cpp's ffn_block).
TEST(ModelGemms, EachGemmIsKeyedByItsOwnMatrixType) {
  using kernels::QType;
  const engine::ModelConfig c = engine::load_preset("llama-1.3b");
  engine::MatrixTypes t = engine::uniform_matrix_types(c, "q4_k");
  t.layers[1].v = "q6_k";
  t.layers[2].down = "q6_k";
  t.layers[3].gate = "q5_k";
  t.output = "q6_k";
  const std::vector<GemmKey> want = {
      quant(2048, 2048, QType::Q4_K, 2, false), quant(5504, 2048, QType::Q4_K, 2, true),
      quant(2048, 5504, QType::Q4_K, 2, false), quant(2048, 2048, QType::Q6_K, 2, false),
      quant(2048, 5504, QType::Q6_K, 2, false), quant(5504, 2048, QType::Q5_K, 2, false),
      quant(5504, 2048, QType::Q4_K, 2, false), quant(32000, 2048, QType::Q6_K, 2, false)};
  EXPECT_EQ(model_gemms(c, 1, 2, t), want);
  EXPECT_EQ(lm_head_gemms(c, 1, 2, t), std::vector<GemmKey>{want.back()});
  t.layers[0].o = "q3_k";
  EXPECT_THROW(model_gemms(c, 1, 2, t), std::invalid_argument);
  EXPECT_THROW(model_gemms(c, 1, 2, engine::MatrixTypes{}), std::invalid_argument);  // no layers
}

// Quantized column shards start on 16-row panels, and FFN shards on the down projection's
// blocks (rank_shards): other N than the same model's BF16 GEMMs.
TEST(ModelGemms, QuantizedShardsStartOnTheirPanelsAndBlocks) {
  using kernels::QType;
  engine::ModelConfig c = engine::load_preset("llama-1.3b");
  c.n_heads = c.n_kv_heads = 6;
  c.head_dim = 48;  // rank 1's q columns start at 144: a 16-row panel, not a 64-column one
  c.dim = 512;
  c.ffn_dim = 1280;  // five 256-value blocks: 2 and 3 a rank; twenty 64-column panels: 10 each
  c.vocab_size = 300;
  const auto keys = model_gemms(c, 2, 2, engine::uniform_matrix_types(c, "q4_k"));
  const auto has = [&](int64_t n, int64_t k, bool pair) {
    return std::find(keys.begin(), keys.end(), quant(n, k, QType::Q4_K, 2, pair)) != keys.end();
  };
  EXPECT_TRUE(has(144, 512, false));  // both ranks' q, k, v: no panel-aligned 160
  EXPECT_FALSE(has(160, 512, false));
  EXPECT_TRUE(has(512, 512, true));   // rank 0's gate/up
  EXPECT_TRUE(has(768, 512, true));   // rank 1's
  EXPECT_TRUE(has(512, 768, false));  // rank 1's down
  EXPECT_FALSE(has(640, 512, true));
  const auto bf16 = model_gemms(c, 2, 2, DType::BF16);
  EXPECT_NE(std::find(bf16.begin(), bf16.end(), GemmKey{640, 512, DType::BF16, 2, true}),
            bf16.end());
}

}  // namespace
}  // namespace sandwich::tuner
