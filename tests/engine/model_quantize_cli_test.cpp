// sandwich-model quantize / make --dtype <preset> / info on quantized files, as a user runs them,
// and one line (no crash) for every kind of broken quantized file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "command.h"
#include "quant_files.h"

namespace sandwich::engine {
namespace {

using test::CommandResult;
using test::expect_one_line_error;
using test::TempDir;

std::string model_tool() {
  return (test::bin_dir() / "sandwich-model").string();
}

// A dummy model of tiny_quant_config's shape made by the tool itself.
std::filesystem::path make(const TempDir& dir, const std::string& dtype) {
  test::tiny_quant_config(dir);
  const auto out = dir / ("made-" + dtype + ".gguf");
  const CommandResult r = test::run_command(model_tool() + " make --preset " +
                                            (dir / "tiny-config/config.json").string() +
                                            " --dtype " + dtype + " -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

TEST(ModelQuantizeCli, MakeAPresetAndDescribeIt) {
  TempDir dir;
  const auto file = make(dir, "q4_k_m");
  const CommandResult info = test::run_command(model_tool() + " info " + file.string());
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("dtypes:        f32 x5 q4_k x13 q6_k x3"), std::string::npos) << info.out;
  // 2 layers: layer 1 (the last eighth) gets q6_k for attn_v and ffn_down, as llama.cpp.
  EXPECT_NE(info.out.find("  blk.1.attn_v.weight  [128 x 256]  q6_k  6.56\n"), std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("  blk.0.attn_v.weight  [128 x 256]  q4_k  4.50\n"), std::string::npos);
  EXPECT_NE(info.out.find("  output.weight  [320 x 256]  q6_k  6.56\n"), std::string::npos);
  EXPECT_NE(info.out.find("  blk.0.attn_norm.weight  [256]  f32  32.00\n"), std::string::npos);
  EXPECT_NE(info.out.find("bits/weight:   "), std::string::npos);
  EXPECT_NE(info.out.find("q6_k 6.56 on "), std::string::npos);
  const CommandResult summary =
      test::run_command(model_tool() + " info --summary " + file.string());
  EXPECT_EQ(summary.out.find("blk.1.attn_v.weight"), std::string::npos);
}

TEST(ModelQuantizeCli, QuantizeAnF32FileAndGenerateFromIt) {
  TempDir dir;
  const auto f32 = make(dir, "f32");
  const auto q8 = dir / "q8.gguf";
  const CommandResult r =
      test::run_command(model_tool() + " quantize " + f32.string() + " " + q8.string() + " q8_0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("blk.0.attn_q.weight [256 x 256] f32 -> q8_0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("output.weight [320 x 256] f32 -> q8_0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" bits per weight; "), std::string::npos) << r.err;
  const CommandResult info = test::run_command(model_tool() + " info --summary " + q8.string());
  EXPECT_NE(info.out.find("f32 x5 q8_0 x16"), std::string::npos) << info.out;
  // It runs on the quantized kernels: four ids.
  const CommandResult gen =
      test::run_command((test::bin_dir() / "sandwich-generate").string() + " -m " + q8.string() +
                        " -n 4 --temp 0 --output-ids -t 1");
  EXPECT_EQ(gen.code, 0) << gen.err;
  std::istringstream ids(gen.out);
  EXPECT_EQ(std::distance(std::istream_iterator<int>(ids), std::istream_iterator<int>()), 4)
      << gen.out;
}

// --threads (or llama-quantize's fourth word) changes the speed, never the bytes; the report gives
// the file's size on disk, not only its tensors'.
TEST(ModelQuantizeCli, ThreadsAndTheSizeOnDisk) {
  TempDir dir;
  const auto f32 = make(dir, "f32");
  std::string bytes[2];
  for (int i = 0; i < 2; ++i) {
    const auto out = dir / ("q" + std::to_string(i) + ".gguf");
    const CommandResult r =
        test::run_command(model_tool() + " quantize -q " + f32.string() + " " + out.string() +
                          (i == 0 ? " q4_k_m --threads 1" : " q4_k_m 2"));
    ASSERT_EQ(r.code, 0) << r.err;
    const auto size = std::filesystem::file_size(out);
    EXPECT_NE(r.err.find("(q4_k_m): " + std::to_string(size) + " bytes on disk ("),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(" bits per weight; "), std::string::npos) << r.err;
    std::ifstream in(out, std::ios::binary);
    bytes[i].assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(bytes[0], bytes[1]);
  const std::string base =
      model_tool() + " quantize " + f32.string() + " " + (dir / "o.gguf").string() + " q8_0";
  expect_one_line_error(test::run_command(base + " -t -2"), "--threads must not be negative");
  expect_one_line_error(test::run_command(base + " two"), "THREADS expects an integer");
}

TEST(ModelQuantizeCli, BadArgumentsAreOneLine) {
  TempDir dir;
  const auto f32 = make(dir, "f32");
  expect_one_line_error(test::run_command(model_tool() + " quantize " + f32.string() + " " +
                                          (dir / "o.gguf").string() + " q3_k_m"),
                        "unknown quantization type 'q3_k_m' (one of q8_0, q4_0");
  expect_one_line_error(test::run_command(model_tool() + " quantize " + f32.string() + " " +
                                          (dir / "o.gguf").string() + " f64"),
                        "q5_k, or f32, f16, bf16)");
  expect_one_line_error(test::run_command(model_tool() + " quantize " + (dir / "nope").string() +
                                          " " + (dir / "o.gguf").string() + " q8_0"),
                        "no such file or folder");
  expect_one_line_error(test::run_command(model_tool() + " quantize " + f32.string()),
                        "quantize takes IN OUT TYPE");
  expect_one_line_error(test::run_command(model_tool() + " make --preset " +
                                          (dir / "tiny-config/config.json").string() +
                                          " --dtype q9_9 -o " + (dir / "o.gguf").string()),
                        "--dtype must be bf16, f32 or one of q8_0");
  EXPECT_FALSE(std::filesystem::exists(dir / "o.gguf"));
}

// f32, f16 and bf16 as llama-quantize writes them: every matrix in the type, vectors f32.
TEST(ModelQuantizeCli, QuantizeToTheUnquantizedTypes) {
  TempDir dir;
  const auto f32 = make(dir, "f32");
  const std::pair<std::string, std::string> types[] = {
      {"f16", "f16 x16 f32 x5"}, {"bf16", "bf16 x16 f32 x5"}, {"f32", "f32 x21"}};
  for (const auto& [type, dtypes] : types) {
    const auto out = dir / (type + ".gguf");
    const CommandResult r = test::run_command(model_tool() + " quantize " + f32.string() + " " +
                                              out.string() + " " + type);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("output.weight [320 x 256] f32 -> " + type), std::string::npos) << r.err;
    const CommandResult info = test::run_command(model_tool() + " info --summary " + out.string());
    EXPECT_NE(info.out.find("dtypes:        " + dtypes + "\n"), std::string::npos) << info.out;
  }
}

// stories260K's ffn_down rows (172 values) are no whole number of 32-value blocks: llama-quantize
// refuses the file for q4_0 ... q8_0; we keep that tensor f32, and the engine computes it in f32
// beside the quantized ones (BF16 would add an error of Q8_0's size).
TEST(ModelQuantizeCli, RowsNoLegacyBlockFitsStayF32) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const auto stories = test::data_dir() / "models/stories260K";
  const auto q4 = dir / "stories-q4_0.gguf";
  const CommandResult r =
      test::run_command(model_tool() + " quantize " + (stories / "stories260K.bin").string() + " " +
                        q4.string() + " q4_0 --tokenizer " + (stories / "tok512.bin").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("blk.4.ffn_down.weight [64 x 172] f32 -> f32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("blk.4.ffn_up.weight [172 x 64] f32 -> q4_0"), std::string::npos) << r.err;
  // The tied embedding is the output too: q6_k, which 64-value rows cannot hold, then q8_0.
  EXPECT_NE(r.err.find("token_embd.weight [512 x 64] f32 -> q8_0"), std::string::npos) << r.err;
  const CommandResult ppl = test::run_command((test::bin_dir() / "sandwich-perplexity").string() +
                                              " -t 1 -c 64 --chunks 1 -m " + q4.string() + " -f " +
                                              (stories / "expected_greedy_200.txt").string());
  ASSERT_EQ(ppl.code, 0) << ppl.err;
  EXPECT_NE(ppl.err.find("weights: q4_0 x 30, f32 x 16, q8_0 x 1;"), std::string::npos) << ppl.err;
}

TEST(ModelQuantizeCli, WeightsTheTypeCannotHoldAreOneLine) {
  TempDir dir;
  const auto f32 = make(dir, "f32");
  // attn_q row 3 of the F32 file: an infinity, then (elsewhere) a value beyond f16's scales.
  const size_t q = test::tensor_data_pos(f32, "blk.0.attn_q.weight") + 3 * 256 * 4;
  const float inf = INFINITY, huge = 1e30f;
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &inf, 4);
  const auto bad = test::patched(dir, f32, "inf-f32.gguf", q, b);
  expect_one_line_error(test::run_command(model_tool() + " quantize " + bad.string() + " " +
                                          (dir / "o.gguf").string() + " q4_k_m"),
                        "tensor 'blk.0.attn_q.weight' row 3 holds a NaN or infinite value");
  std::memcpy(b.data(), &huge, 4);
  const auto big = test::patched(dir, f32, "big-f32.gguf", q, b);
  expect_one_line_error(test::run_command(model_tool() + " quantize " + big.string() + " " +
                                          (dir / "o.gguf").string() + " q8_0"),
                        "tensor 'blk.0.attn_q.weight' row 3 block 0 holds values too large for "
                        "q8_0's f16 scales");
  EXPECT_FALSE(std::filesystem::exists(dir / "o.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir / "o.gguf.partial"));
}

// Issue 17's bad quantized files, through the tools: one line each, no crash.
TEST(ModelQuantizeCli, BrokenQuantizedFilesAreOneLine) {
  TempDir dir;
  const auto good = make(dir, "q4_k_m");
  const auto bytes = test::read_bytes(good);
  const size_t header = test::tensor_header_pos(bytes, "blk.0.attn_q.weight");
  const size_t data = test::tensor_data_pos(good, "blk.1.attn_q.weight");
  const struct {
    std::filesystem::path file;
    std::string fragment;
  } cases[] = {
      {test::truncated(dir, good, 1000),
       "truncated file: tensor 'output.weight' (q6_k, 320 blocks"},
      {test::patched(dir, good, "rows.gguf", header + 12, {1, 1}),
       "tensor 'blk.0.attn_q.weight' (q4_k) needs 37008 bytes (257 blocks of 144)"},
      {test::patched(dir, good, "inf.gguf", data + 7 * 144, test::kF16Inf),
       "tensor 'blk.1.attn_q.weight' (q4_k) has a NaN or infinite scale in block 7 of 256"},
      {test::patched(dir, good, "nan.gguf", data + 2, test::kF16NaN),
       "tensor 'blk.1.attn_q.weight' (q4_k) has a NaN or infinite scale in block 0"},
      {test::patched(dir, good, "q3k.gguf", header + 20, {11, 0, 0, 0}),
       "tensor 'blk.0.attn_q.weight' is q3_k, which sandwich does not support (supported: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file.string());
    expect_one_line_error(test::run_command(model_tool() + " info " + c.file.string()), c.fragment);
    expect_one_line_error(test::run_command((test::bin_dir() / "sandwich-generate").string() +
                                            " -m " + c.file.string() + " -n 1 -t 1"),
                          c.fragment);
  }
}

}  // namespace
}  // namespace sandwich::engine
