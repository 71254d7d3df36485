// Quantized GGUF files: llama.cpp's per-tensor type mix, what the loader makes of the blocks,
// and one clear error for each way a quantized file can be broken.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "engine/formats/quantize_model.h"
#include "error_text.h"
#include "formats/dummy_tensor.h"
#include "formats/gguf_llama_layout.h"
#include "formats/model_source.h"
#include "kernels/quant_blocks.h"
#include "model_fixtures.h"
#include "quant_files.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  return test::error_text<std::exception>(f, "(no error)");
}

std::string type_of(const std::string& preset, const std::string& name, int64_t row,
                    int n_layers = 12, bool has_output = true) {
  ModelConfig c;
  c.n_layers = n_layers;
  return gguf::tensor_type_name(preset_tensor_type(*quant_preset(preset), name, row,
                                                   name.find("norm") == std::string::npos ? 2 : 1,
                                                   c, has_output));
}

// What llama.cpp's llama-quantize chose for llama-160m (12 layers) in Q4_K_M.
TEST(QuantPresets, Q4KMMixesTypesAsLlamaCppDoes) {
  for (int l = 0; l < 12; ++l) {
    const bool more = l == 0 || l == 3 || l == 6 || l == 9 || l == 10 || l == 11;
    SCOPED_TRACE(l);
    EXPECT_EQ(type_of("q4_k_m", tensor_name(l, "attn_v"), 768), more ? "q6_k" : "q4_k");
    EXPECT_EQ(type_of("q4_k_m", tensor_name(l, "ffn_down"), 3072), more ? "q6_k" : "q4_k");
    EXPECT_EQ(type_of("q4_k_m", tensor_name(l, "attn_q"), 768), "q4_k");
    EXPECT_EQ(type_of("q4_k_m", tensor_name(l, "ffn_up"), 768), "q4_k");
    EXPECT_EQ(type_of("q4_k_m", tensor_name(l, "attn_norm"), 768), "f32");
  }
  EXPECT_EQ(type_of("q4_k_m", "output.weight", 768), "q6_k");
  EXPECT_EQ(type_of("q4_k_m", "token_embd.weight", 768), "q4_k");
  // Tied embeddings: token_embd is the output matrix too.
  EXPECT_EQ(type_of("q4_k_m", "token_embd.weight", 768, 12, false), "q6_k");
}

TEST(QuantPresets, OtherPresets) {
  EXPECT_EQ(type_of("q4_k_s", tensor_name(3, "attn_v"), 768), "q5_k");
  EXPECT_EQ(type_of("q4_k_s", tensor_name(4, "attn_v"), 768), "q4_k");
  EXPECT_EQ(type_of("q4_k_s", tensor_name(0, "ffn_down"), 3072), "q5_k");
  EXPECT_EQ(type_of("q4_k_s", tensor_name(1, "ffn_down"), 3072), "q4_k");
  EXPECT_EQ(type_of("q5_k_m", tensor_name(0, "ffn_down"), 3072), "q6_k");
  EXPECT_EQ(type_of("q5_k_s", tensor_name(0, "ffn_down"), 3072), "q5_k");
  EXPECT_EQ(type_of("q8_0", "output.weight", 768), "q8_0");
  EXPECT_EQ(type_of("q4_0", "output.weight", 768), "q6_k");
  EXPECT_EQ(type_of("q4_0", tensor_name(0, "attn_v"), 768), "q4_0");
  EXPECT_EQ(type_of("q6_k", tensor_name(0, "ffn_down"), 3072), "q6_k");
  // Plain q4_k: one type for every matrix.
  EXPECT_EQ(type_of("q4_k", "output.weight", 768), "q4_k");
  EXPECT_EQ(type_of("q4_k", tensor_name(0, "attn_v"), 768), "q4_k");
  // llama.cpp's 70B rule (80 layers): attn_v one step up.
  EXPECT_EQ(type_of("q4_k_m", tensor_name(20, "attn_v"), 8192, 80), "q5_k");
  EXPECT_FALSE(quant_preset("q3_k_m"));
  EXPECT_TRUE(quant_preset("Q4_K_M"));
}

TEST(QuantPresets, RowsThatAreNotWholeSuperBlocksFallBackAsLlamaCpp) {
  EXPECT_EQ(type_of("q4_k_m", tensor_name(1, "attn_q"), 288), "q5_0");
  EXPECT_EQ(type_of("q5_k_s", tensor_name(1, "attn_q"), 288), "q5_1");
  EXPECT_EQ(type_of("q6_k", tensor_name(1, "attn_q"), 288), "q8_0");
  EXPECT_EQ(type_of("q4_k_m", "output.weight", 288), "q8_0");
  EXPECT_EQ(type_of("q4_k_m", tensor_name(1, "attn_q"), 100), "f16");
  // llama-quantize refuses such rows for the legacy types ("Unsupported tensor size"): we keep
  // the tensor f32 (stories260K's ffn_down, 172 values a row).
  EXPECT_EQ(type_of("q8_0", tensor_name(1, "attn_q"), 100), "f32");
  EXPECT_EQ(type_of("q4_0", tensor_name(1, "ffn_down"), 172), "f32");
  EXPECT_EQ(type_of("q5_1", tensor_name(1, "ffn_up"), 100), "f32");
}

// Every preset's file reads back with the types the preset chose and weights near the f32 ones.
TEST(QuantFiles, DummyModelInEveryPresetReadsBack) {
  TempDir dir;
  const ModelConfig c = test::tiny_quant_config(dir);
  for (const char* preset :
       {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k_m", "q4_k_s", "q5_k_m", "q5_k_s", "q6_k"}) {
    SCOPED_TRACE(preset);
    const auto path = test::write_tiny_quantized(dir, preset);
    const ModelSource src = read_gguf(path);
    EXPECT_EQ(gguf::Reader(path).get_int("general.file_type"), quant_preset(preset)->file_type);
    for (const auto& spec : llama_tensor_specs(c)) {
      const SourceTensor& t = src.tensors.at(spec.name);
      const uint32_t want =
          preset_tensor_type(*quant_preset(preset), spec.name, spec.cols ? spec.cols : spec.rows,
                             spec.cols ? 2 : 1, c, true);
      EXPECT_EQ(source_type_name(t), gguf::tensor_type_name(want)) << spec.name;
      if (!t.qtype) continue;
      std::vector<float> got(static_cast<size_t>(t.elements()));
      kernels::dequantize_ref(*t.qtype, t.data, got.data(), t.elements());
      std::vector<float> ref(got.size());
      for (int64_t f = 0; f < spec.rows; ++f) {
        const int64_t j = spec.rope_rows ? rotate_half_row(f, c.head_dim) : f;
        fill_dummy_tensor(spec.name, spec.rows, spec.cols, kernels::DType::F32, 1, j, j + 1,
                          ref.data() + f * spec.cols);
      }
      double err = 0, norm = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        err += (got[i] - ref[i]) * (got[i] - ref[i]);
        norm += ref[i] * ref[i];
      }
      EXPECT_LT(std::sqrt(err / norm), 0.12) << spec.name;  // 4-bit levels over uniform weights
    }
  }
}

// `quantize` of an F32 file quantizes the very rows `make --dtype` does.
TEST(QuantFiles, QuantizingAnF32FileEqualsMakingTheQuantizedModel) {
  TempDir dir;
  const ModelConfig c = test::tiny_quant_config(dir);
  const auto f32 = dir / "tiny-f32.gguf";
  write_dummy_gguf(c, WeightDType::F32, default_dummy_vocab(c), 1, f32);
  const auto made = test::write_tiny_quantized(dir, "q4_k_m");
  const auto quantized = dir / "quantized.gguf";
  quantize_model_file(f32, quantized, *quant_preset("q4_k_m"), nullptr);
  gguf::Reader a(made), b(quantized);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const auto& t : a.tensors()) {
    const gguf::TensorInfo* u = b.find_tensor(t.name);
    ASSERT_TRUE(u) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    ASSERT_EQ(u->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_EQ(b.get_int("general.file_type"), 15);
  EXPECT_EQ(b.get_strings("tokenizer.ggml.tokens"), a.get_strings("tokenizer.ggml.tokens"));
}

// A Hugging Face folder (rotate-half q/k rows, BF16) quantizes to the same blocks as the same
// weights in a GGUF file (interleaved rows): the rows are put back in GGUF's order first.
TEST(QuantFiles, HuggingFaceFolderQuantizesLikeTheSameGguf) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  test::write_stories_hf(dir / "hf", kernels::DType::BF16, false);
  test::write_stories_gguf(dir / "stories.gguf", kernels::DType::BF16);
  const QuantPreset p = *quant_preset("q4_k_m");
  quantize_model_file(dir / "hf", dir / "from-hf.gguf", p, nullptr,
                      test::stories_dir() / "tok512.bin");
  quantize_model_file(dir / "stories.gguf", dir / "from-gguf.gguf", p, nullptr);
  gguf::Reader a(dir / "from-hf.gguf"), b(dir / "from-gguf.gguf");
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  std::set<std::string> types;
  for (const auto& t : a.tensors()) {
    const gguf::TensorInfo* u = b.find_tensor(t.name);
    ASSERT_TRUE(u) << t.name;
    ASSERT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
    types.insert(gguf::tensor_type_name(t.type));
  }
  // stories260K's rows (64, 172) are not whole super-blocks: llama.cpp's fallbacks.
  EXPECT_EQ(types, (std::set<std::string>{"f32", "q5_0", "q8_0", "f16"}));
}

TEST(QuantFiles, AnExplicitDtypeWidensToTheDequantizedWeights) {
  TempDir dir;
  ModelSource src = read_gguf(test::write_tiny_quantized(dir, "q4_k_m"));
  std::map<std::string, std::vector<float>> deq;
  for (const auto& [name, t] : src.tensors) {
    if (!t.qtype) continue;
    auto& v = deq[name];
    v.resize(static_cast<size_t>(t.elements()));
    kernels::dequantize_ref(*t.qtype, t.data, v.data(), t.elements());
  }
  std::vector<std::string> notes;
  widen_quantized_tensors(src, kernels::DType::BF16, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(
      notes[0],
      "dequantizing q4_k, q6_k weights to bf16 as --dtype asks (without it they stay quantized)");
  ASSERT_FALSE(deq.empty());
  for (const auto& [name, v] : deq) {
    const SourceTensor& t = src.tensors.at(name);
    ASSERT_FALSE(t.qtype);
    ASSERT_EQ(t.dtype, kernels::DType::BF16);
    const auto* w = static_cast<const kernels::bf16_t*>(t.data);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(w[i], kernels::f32_to_bf16(v[i])) << name;
  }
}

TEST(QuantFileErrors, UnsupportedTypeIsNamed) {
  TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q4_k_m");
  // The type id sits after the name, n_dims (4 bytes) and two dims (16 bytes).
  const size_t pos = test::tensor_header_pos(test::read_bytes(good), "blk.0.attn_q.weight") + 20;
  const auto bad = test::patched(dir, good, "q3k.gguf", pos, {11, 0, 0, 0});  // q3_k
  const std::string e = error_of([&] { read_gguf(bad); });
  EXPECT_NE(e.find("tensor 'blk.0.attn_q.weight' is q3_k, which sandwich does not support "
                   "(supported: f32, f16, bf16, q4_0"),
            std::string::npos)
      << e;
}

TEST(QuantFileErrors, TruncatedTensorSaysHowMuchIsMissing) {
  TempDir dir;
  const auto bad = test::truncated(dir, test::write_tiny_quantized(dir, "q4_k_m"), 1000);
  const std::string e = error_of([&] { read_gguf(bad); });
  EXPECT_NE(e.find("truncated file: tensor 'output.weight' (q6_k, 320 blocks of 210 bytes = "
                   "67200)"),
            std::string::npos)
      << e;
}

TEST(QuantFileErrors, BlockCountThatDoesNotMatchTheShape) {
  TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q4_k_m");
  // ne[1] of attn_q from 256 to 257 rows: one more row of blocks than the file holds for it.
  const size_t pos = test::tensor_header_pos(test::read_bytes(good), "blk.0.attn_q.weight") + 12;
  const auto bad = test::patched(dir, good, "rows.gguf", pos, {1, 1});
  const std::string e = error_of([&] { read_gguf(bad); });
  EXPECT_NE(e.find("tensor 'blk.0.attn_q.weight' (q4_k) needs 37008 bytes (257 blocks of 144)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the block count does not match the shape"), std::string::npos) << e;
}

TEST(QuantFileErrors, RowsThatAreNotWholeBlocks) {
  TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q8_0");
  // attn_q as 1024 rows of 48: whole blocks in all (the reader's check), but not in a row.
  const size_t pos = test::tensor_header_pos(test::read_bytes(good), "blk.0.attn_q.weight") + 4;
  const auto bad = test::patched(dir, good, "cols.gguf", pos,
                                 {48, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x04, 0, 0, 0, 0, 0, 0});
  const std::string e = error_of([&] { read_gguf(bad); });
  EXPECT_NE(e.find("tensor 'blk.0.attn_q.weight' (q8_0) has rows of 48 values, not a multiple "
                   "of its 32-value blocks"),
            std::string::npos)
      << e;
}

TEST(QuantFileErrors, NonFiniteScalesNameTheBlock) {
  TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q4_k_m");
  const size_t q = test::tensor_data_pos(good, "blk.1.attn_q.weight");
  // Block 5's d (the first field) infinite.
  const auto inf = test::patched(dir, good, "inf.gguf", q + 5 * 144, test::kF16Inf);
  std::string e = error_of([&] { read_gguf(inf); });
  EXPECT_NE(e.find("tensor 'blk.1.attn_q.weight' (q4_k) has a NaN or infinite scale in block 5 "
                   "of 256"),
            std::string::npos)
      << e;
  // Block 0's dmin NaN.
  const auto nan = test::patched(dir, good, "nan.gguf", q + 2, test::kF16NaN);
  e = error_of([&] { read_gguf(nan); });
  EXPECT_NE(e.find("has a NaN or infinite scale in block 0 of"), std::string::npos) << e;
  // Q6_K keeps d last in the block.
  const size_t o = test::tensor_data_pos(good, "output.weight");
  const auto q6 = test::patched(dir, good, "q6.gguf", o + 3 * 210 + 208, test::kF16NaN);
  e = error_of([&] { read_gguf(q6); });
  EXPECT_NE(e.find("tensor 'output.weight' (q6_k) has a NaN or infinite scale in block 3"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace sandwich::engine
