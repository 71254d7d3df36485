#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "engine/formats/gguf.h"
#include "test_data.h"

namespace sandwich::engine::gguf {
namespace {

using test::TempDir;

std::vector<uint8_t> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void spit(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::filesystem::path write_sample(const TempDir& dir) {
  Writer w;
  w.set("general.architecture", Value::of_string("llama"));
  w.set("llama.block_count", Value::of_u32(3));
  w.set("llama.rope.freq_base", Value::of_f32(500000.0f));
  w.set("tokenizer.ggml.add_bos_token", Value::of_bool(true));
  w.set("tokenizer.ggml.tokens", Value::of_strings({"a", "bb", ""}));
  w.set("tokenizer.ggml.scores", Value::of_f32s({0.5f, -1.0f, 2.0f}));
  w.add_tensor("t.f32", 0, {3, 2}, [](uint8_t* d, uint64_t n) {
    ASSERT_EQ(n, 24u);
    for (int i = 0; i < 6; ++i) reinterpret_cast<float*>(d)[i] = static_cast<float>(i);
  });
  w.add_tensor("t.bf16", 30, {5}, [](uint8_t* d, uint64_t n) { std::memset(d, 0x3f, n); });
  auto p = dir / "sample.gguf";
  w.write(p);
  return p;
}

TEST(Gguf, WriterAndReaderRoundTrip) {
  TempDir dir;
  Reader r(write_sample(dir));
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.get_int("llama.block_count"), 3);
  EXPECT_FLOAT_EQ(static_cast<float>(r.get_float("llama.rope.freq_base")), 500000.0f);
  EXPECT_TRUE(r.get_bool("tokenizer.ggml.add_bos_token", false));
  EXPECT_EQ(r.get_strings("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "bb", ""}));
  EXPECT_EQ(r.get_numbers("tokenizer.ggml.scores")[1], -1.0);
  ASSERT_EQ(r.tensors().size(), 2u);
  const TensorInfo* t = r.find_tensor("t.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(reinterpret_cast<const float*>(t->data)[5], 5.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 32, 0u);
  EXPECT_EQ(r.find_tensor("t.bf16")->nbytes, 10u);
  EXPECT_EQ(r.get_int("missing", 7), 7);
}

TEST(Gguf, ReadsTheSharedVocabFile) {
  SANDWICH_REQUIRE_DATA();
  Reader r(test::data_dir() / "tokenizers/vocab-gguf/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(r.get_strings("tokenizer.ggml.tokens").size(), 32000u);
  EXPECT_EQ(r.get_int("tokenizer.ggml.bos_token_id"), 1);
}

void expect_error(const std::filesystem::path& p, const std::string& fragment) {
  try {
    Reader r(p);
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.filename().string()), std::string::npos) << e.what();
  }
}

TEST(Gguf, RejectsBadFilesWithClearErrors) {
  TempDir dir;
  auto good = slurp(write_sample(dir));

  auto bad_magic = good;
  bad_magic[0] = 'X';
  spit(dir / "magic.gguf", bad_magic);
  expect_error(dir / "magic.gguf", "bad magic");

  auto bad_version = good;
  bad_version[4] = 9;
  spit(dir / "version.gguf", bad_version);
  expect_error(dir / "version.gguf", "version");

  // Every truncation point fails cleanly (header, metadata, tensor infos, data).
  for (size_t cut :
       {size_t{3}, size_t{10}, size_t{30}, size_t{80}, good.size() / 2, good.size() - 25}) {
    spit(dir / "cut.gguf", std::vector<uint8_t>(good.begin(), good.begin() + cut));
    expect_error(dir / "cut.gguf", "");
  }
  // The last tensor (10 bytes) is followed by padding to 32: cut into its data.
  spit(dir / "trunc.gguf", std::vector<uint8_t>(good.begin(), good.end() - 25));
  expect_error(dir / "trunc.gguf", "truncated");

  // Huge counts in the header must not allocate or loop forever.
  auto huge = good;
  for (int i = 0; i < 8; ++i) huge[8 + i] = 0xff;
  spit(dir / "huge.gguf", huge);
  expect_error(dir / "huge.gguf", "implausible");

  spit(dir / "empty.gguf", {});
  expect_error(dir / "empty.gguf", "too small");
  expect_error(dir / "does-not-exist.gguf", "cannot open");
}

// A GGUF header with one metadata entry: key, type ARRAY, element type, count, then `tail`.
std::vector<uint8_t> array_header(const std::string& key, uint32_t elem_type, uint64_t count,
                                  const std::vector<uint8_t>& tail = {}) {
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u64 = [&](uint64_t v) { put(&v, 8); };
  put("GGUF", 4);
  u32(3);
  u64(0);  // tensors
  u64(1);  // metadata entries
  u64(key.size());
  put(key.data(), key.size());
  u32(static_cast<uint32_t>(ValueType::ARRAY));
  u32(elem_type);
  u64(count);
  b.insert(b.end(), tail.begin(), tail.end());
  return b;
}

TEST(Gguf, HugeOrNestedArraysAreClearErrors) {
  TempDir dir;
  // 2^32 strings: rejected from the bytes left in the file, before anything is reserved.
  spit(dir / "huge_tokens.gguf",
       array_header("tokenizer.ggml.tokens", static_cast<uint32_t>(ValueType::STRING),
                    uint64_t{1} << 32));
  expect_error(dir / "huge_tokens.gguf",
               "implausible array length 4294967296 of metadata 'tokenizer.ggml.tokens'");
  // Below the absolute limit but still far more than the file holds.
  spit(dir / "huge_bytes.gguf",
       array_header("x", static_cast<uint32_t>(ValueType::U8), uint64_t{1} << 31));
  expect_error(dir / "huge_bytes.gguf", "implausible array length");
  // An array of arrays: llama.cpp rejects them and so do we, by name.
  std::vector<uint8_t> inner(12, 0);  // element type U8, count 0
  spit(dir / "nested.gguf",
       array_header("general.nested", static_cast<uint32_t>(ValueType::ARRAY), 1, inner));
  expect_error(dir / "nested.gguf", "metadata 'general.nested': nested arrays are not supported");
  spit(dir / "elem_type.gguf", array_header("x", 77, 1, std::vector<uint8_t>(8, 0)));
  expect_error(dir / "elem_type.gguf", "unknown type 77");
}

// Floats beyond int64 (and NaN) have no integer view; converting them was undefined behaviour
// (found by the gguf fuzz target under UBSan's float-cast-overflow check).
TEST(Gguf, FloatsBeyondInt64ReadAsFloats) {
  TempDir dir;
  Writer w;
  w.set("big", Value::of_f32(1e30f));
  w.set("nan", Value::of_f32(std::numeric_limits<float>::quiet_NaN()));
  w.set("floats", Value::of_f32s({-1e30f, std::numeric_limits<float>::infinity()}));
  w.write(dir / "floats.gguf");
  Reader r(dir / "floats.gguf");
  EXPECT_EQ(r.get_float("big"), double{1e30f});
  EXPECT_EQ(r.find("big")->i, 0);
  EXPECT_TRUE(std::isnan(r.get_float("nan")));
  EXPECT_EQ(r.get_numbers("floats")[0], double{-1e30f});
  EXPECT_EQ(Value::of_f32(-1e30f).i, 0);
}

TEST(Gguf, ReportsMistypedMetadata) {
  TempDir dir;
  Reader r(write_sample(dir));
  EXPECT_THROW(r.get_string("llama.block_count"), std::runtime_error);
  EXPECT_THROW(r.get_int("general.architecture"), std::runtime_error);
  EXPECT_THROW(r.get_strings("tokenizer.ggml.scores"), std::runtime_error);
  EXPECT_THROW(r.get_string("nope"), std::runtime_error);
}

}  // namespace
}  // namespace sandwich::engine::gguf
