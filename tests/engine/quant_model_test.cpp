// Quantized GGUF models served on the quantized kernels: the blocks stay packed as they are, the
// fast path agrees with the dequantized model, and tensor-parallel ranks split on whole blocks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/formats/quantize_model.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/generator.h"
#include "error_text.h"
#include "kernels/quantize.h"
#include "model_fixtures.h"
#include "quant_files.h"
#include "runtime/forward.h"

namespace sandwich::engine {
namespace {

using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  return test::error_text<std::exception>(f, "");
}

std::unique_ptr<Model> load(const std::filesystem::path& p) {
  LoadOptions o;
  o.model = p.string();
  o.threads = 2;
  return load_model(o);
}

// stories260K (a trained model: its greedy path has margins a random one lacks) with its matrices
// in blocks of type t; ffn_down's rows (172 values) are no whole number of blocks and stay f32.
std::filesystem::path stories_quantized(const TempDir& dir, kernels::QType t) {
  const auto& info = kernels::qtype_info(t);
  const auto w = test::read_stories();
  gguf::Writer g;
  g.set("general.architecture", gguf::Value::of_string("llama"));
  g.set("llama.context_length", gguf::Value::of_u32(w.seq_len));
  g.set("llama.embedding_length", gguf::Value::of_u32(w.dim));
  g.set("llama.block_count", gguf::Value::of_u32(w.layers));
  g.set("llama.feed_forward_length", gguf::Value::of_u32(w.hidden));
  g.set("llama.attention.head_count", gguf::Value::of_u32(w.heads));
  g.set("llama.attention.head_count_kv", gguf::Value::of_u32(w.kv_heads));
  g.set("llama.attention.layer_norm_rms_epsilon", gguf::Value::of_f32(1e-5f));
  vocab_to_gguf(vocab_from_tokenizer_file(test::stories_dir() / "tok512.bin"), g);
  for (const auto& [name, data] : w.t) {
    auto [rows, cols] = test::shape_of(w, name);
    std::vector<uint64_t> dims = cols ? std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)}
                                      : std::vector<uint64_t>{uint64_t(rows)};
    std::vector<uint8_t> bytes;
    uint32_t type = 0;
    if (cols && cols % info.block_elems == 0) {
      type = info.ggml_type;
      bytes.resize(kernels::quantized_bytes(t, rows * cols));
      kernels::quantize_ref(t, data.data(), bytes.data(), rows * cols);
    } else {
      bytes = test::encode(data, kernels::DType::F32);
    }
    g.add_tensor(name, type, dims,
                 [bytes](uint8_t* d, uint64_t n) { std::memcpy(d, bytes.data(), n); });
  }
  const auto out = dir / ("stories-" + std::string(info.name) + ".gguf");
  g.write(out);
  return out;
}

// Greedy ids of the fast path (one rank of two threads) and of the reference forward pass, which
// runs on the weights dequantized to f32 (ggml's values bit for bit) in double.
struct Greedy {
  std::vector<int32_t> fast, ref;
  double worst_logit_gap = 0;  // max |fast - ref| / max |ref| over the steps
  int mismatches = 0;
  double widest_mismatch = 0;  // the reference's margin between the two picks, / max |ref|
};

Greedy fast_and_reference(const Model& m, int n) {
  const int V = m.config.vocab_size;
  KVCache kv(m.config, KVCache::bytes_for_tokens(m.config, n + 1));
  kernels::ThreadTeam team(2);
  ForwardPass fp(m, kv, team);
  ReferenceForward ref(m);
  std::vector<int32_t> blocks;
  EXPECT_TRUE(kv.reserve(blocks, n + 1));
  Greedy g;
  int32_t tok = m.config.bos_id;
  std::vector<float> logits(V);
  for (int pos = 0; pos < n; ++pos) {
    // Both continue from the reference's token, so one near-tie does not derail the rest.
    BatchEntry e{std::span<const int32_t>(&tok, 1), pos, blocks, true};
    fp.run({&e, 1}, logits.data());
    const std::vector<float> want = ref.step(tok);
    double scale = 0, gap = 0;
    for (int i = 0; i < V; ++i) {
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
      gap = std::max(gap, std::abs(static_cast<double>(logits[i]) - want[i]));
    }
    g.worst_logit_gap = std::max(g.worst_logit_gap, gap / scale);
    g.fast.push_back(argmax(logits.data(), V));
    g.ref.push_back(argmax(want.data(), V));
    if (g.fast.back() != g.ref.back()) {
      ++g.mismatches;
      g.widest_mismatch =
          std::max(g.widest_mismatch, (want[g.ref.back()] - want[g.fast.back()]) / scale);
    }
    tok = g.ref.back();
  }
  return g;
}

std::string greedy_text(const Model& m, const std::string& config, int n) {
  GeneratorOptions o;
  o.prefill = o.decode = topotree::parse_service_config(config);
  Generator g(m, o);
  GenerationRequest r;
  r.prompt = m.tokenizer->encode("Once upon a time", true);
  r.max_tokens = n;
  r.sampling.temperature = 0;
  return g.generate(r).text;
}

// Heads of 64 (2 KV heads), dim = FFN = 512: every shard of 2 ranks has whole super-blocks when
// the model has 8 heads; with 4 the output projection's are half one.
std::filesystem::path tp_model(const TempDir& dir, int heads, const std::string& preset) {
  const auto folder = dir / ("tp-" + std::to_string(heads));
  std::filesystem::create_directories(folder);
  test::write_llama_config(folder, {64 * heads, 2, heads, 2, 512, 320, 64},
                           {{"tie_word_embeddings", false}});
  ModelConfig c = read_model_config(folder);
  const auto file = folder / (preset + ".gguf");
  write_dummy_gguf_quantized(c, *quant_preset(preset), default_dummy_vocab(c), 1, file);
  return file;
}

TEST(QuantModel, MatricesKeepTheirBlocksAndTheStartUpLineCountsThem) {
  TempDir dir;
  auto m = load(test::write_tiny_quantized(dir, "q4_k_m"));
  const ModelWeights& w = m->weights();
  ASSERT_TRUE(w.embedding.qtype);
  EXPECT_EQ(*w.output.qtype, kernels::QType::Q6_K);
  EXPECT_EQ(*w.layers[0].wq.qtype, kernels::QType::Q4_K);
  // Q4_K_M: q4_k, and q6_k for output, attn_v and ffn_down in some layers; norms stay f32.
  // 2 layers of 7 matrices, the embedding and the output head; 2 norms a layer and the last.
  const std::string want = "q4_k x 13, f32 x 5, q6_k x 3; ";
  EXPECT_EQ(m->weight_types.substr(0, want.size()), want) << m->weight_types;
  EXPECT_GT(m->bytes_per_weight, 4.5 / 8);
  EXPECT_LT(m->bytes_per_weight, 6.6 / 8);
}

// The integer kernels quantize each activation block to int8 (as ggml does), so the fast path is
// not the dequantized model's arithmetic: its logits stay within 5% of the largest (2% seen),
// and its greedy ids agree with the dequantized model's but at near-ties (q5_1: one in 48).
TEST(QuantModel, StoriesGreedyIdsMatchTheDequantizedModel) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  for (const auto t : {kernels::QType::Q8_0, kernels::QType::Q4_0, kernels::QType::Q5_1}) {
    const std::string name(kernels::qtype_info(t).name);
    auto m = load(stories_quantized(dir, t));
    ASSERT_EQ(m->weights().layers[0].wq.qtype, t);
    const Greedy g = fast_and_reference(*m, 48);
    EXPECT_LT(g.worst_logit_gap, 0.05) << name;
    // Greedy ids agree except at near-ties: the reference's own margin under the error bound.
    EXPECT_LE(g.mismatches, 2) << name;
    EXPECT_LT(g.widest_mismatch, 0.01) << name;
    std::printf("%s: logits within %.4f of the largest, %d near-tie(s) of %.4f in 48 steps\n",
                name.c_str(), g.worst_logit_gap, g.mismatches, g.widest_mismatch);
  }
}

// The K types on a dummy model (random weights: no greedy margins to compare): logits within the
// same bound of the dequantized model's.
TEST(QuantModel, KTypeLogitsStayCloseToTheDequantizedModel) {
  TempDir dir;
  for (const std::string preset : {"q4_k_m", "q6_k"}) {
    auto m = load(tp_model(dir, 8, preset));
    EXPECT_LT(fast_and_reference(*m, 8).worst_logit_gap, 0.05) << preset;
  }
}

// A K-type model whose shards hold whole 256-value blocks: 2 ranks give 1 rank's logits up to the
// all-reduce's summation order.
TEST(QuantModel, TwoRanksAgreeWithOneOnWholeBlocks) {
  TempDir dir;
  auto m = load(tp_model(dir, 8, "q4_k_m"));
  EXPECT_NO_THROW(check_tensor_parallel(*m, 2));
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64) * 2);
  ExecutorLimits lim;
  lim.max_tokens = 64;
  lim.max_entries = 1;
  auto one = make_executor(*m, kv, topotree::parse_service_config("1x1"), lim);
  auto two = make_executor(*m, kv, topotree::parse_service_config("2x1"), lim);
  std::vector<int32_t> ta, tb, prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back((i * 31 + 7) % 320);
  ASSERT_TRUE(kv.reserve(ta, 32));
  ASSERT_TRUE(kv.reserve(tb, 32));
  std::vector<float> la(320), lb(320);
  BatchEntry ea{prompt, 0, ta, true}, eb{prompt, 0, tb, true};
  one->run({&ea, 1}, la.data());
  two->run({&eb, 1}, lb.data());
  double scale = 0;
  for (float v : la) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (int i = 0; i < 320; ++i) ASSERT_NEAR(la[i], lb[i], 1e-4 * scale) << i;
}

TEST(QuantModel, StoriesTwoRanksGiveOneRanksText) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  auto m = load(stories_quantized(dir, kernels::QType::Q4_0));
  const std::string one = greedy_text(*m, "1x2", 60);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(greedy_text(*m, "2x1", 60), one);
}

// 4 heads of 64 over 2 ranks: the output projection's K shards would be 128 values, half a
// Q4_K super-block. Refused before any rank starts, in one line.
TEST(QuantModel, ASplitThatCutsABlockIsRefusedInOneLine) {
  TempDir dir;
  auto m = load(tp_model(dir, 4, "q4_k_m"));
  const std::string want =
      "2 tensor-parallel ranks would cut quantized blocks: blk.0.attn_output.weight (q4_k, "
      "256-value blocks, 256 input columns) would be cut at column 128 (a shard must hold whole "
      "blocks); use 1 rank";
  EXPECT_EQ(error_of([&] { check_tensor_parallel(*m, 2); }), want);
  KVCache kv(m->config, KVCache::bytes_for_tokens(m->config, 64) * 2);
  EXPECT_EQ(error_of([&] { make_executor(*m, kv, topotree::parse_service_config("2x1"), {}); }),
            want);
  // Legacy 32-value blocks split there.
  auto q8 = load(tp_model(dir, 4, "q8_0"));
  EXPECT_NO_THROW(check_tensor_parallel(*q8, 2));
}

}  // namespace
}  // namespace sandwich::engine
