// Must-show of issue 17: dequantize_ref gives llama.cpp's floats bit for bit, for blocks that
// llama.cpp's own quantizer wrote (tests/data/quant/README.md says how they were made); and
// quantize_ref, given the same f32 rows, writes the very blocks llama.cpp's reference does.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "engine/gguf.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "test_data.h"

namespace sandwich {
namespace {

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

TEST(DequantizeLikeLlamaCpp, EveryTypeBitForBit) {
  const auto dir = test::source_dir() / "tests/data/quant";
  std::ifstream list(dir / "llama_cpp_dequant.txt");
  ASSERT_TRUE(list) << dir;
  std::string file, name, type;
  int64_t n;
  std::string hash;
  std::set<std::string> types;
  int checked = 0;
  while (list >> file >> name >> type >> n >> hash) {
    SCOPED_TRACE(file + " " + name);
    gguf::Reader r(dir / file);
    const gguf::TensorInfo* t = r.find_tensor(name);
    ASSERT_TRUE(t);
    const auto q = kernels::qtype_from_ggml(t->type);
    ASSERT_TRUE(q);
    EXPECT_EQ(kernels::qtype_from_name(type), q);
    ASSERT_EQ(static_cast<int64_t>(t->elements()), n);
    std::vector<float> y(static_cast<size_t>(n));
    kernels::dequantize_ref(*q, t->data, y.data(), n);
    std::ostringstream ours;
    ours << std::hex;
    ours.width(16);
    ours.fill('0');
    ours << fnv1a(y.data(), y.size() * sizeof(float));
    EXPECT_EQ(ours.str(), hash);
    types.insert(std::string(kernels::qtype_info(*q).name));
    ++checked;
  }
  EXPECT_EQ(checked, 16);
  EXPECT_EQ(types.size(), 8u);  // every file type; Q8_K is an activation type, never in a file
}

TEST(QuantizeLikeLlamaCpp, SameBlocksFromTheSameRows) {
  const auto dir = test::source_dir() / "tests/data/quant";
  gguf::Reader input(dir / "input-f32.gguf");
  int checked = 0;
  for (const char* file : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"}) {
    gguf::Reader theirs(dir / (std::string(file) + ".gguf"));
    for (const auto& t : theirs.tensors()) {
      SCOPED_TRACE(std::string(file) + " " + t.name);
      const gguf::TensorInfo* x = input.find_tensor(t.name);
      ASSERT_TRUE(x);
      ASSERT_EQ(x->type, 0u);
      ASSERT_EQ(x->elements(), t.elements());
      const auto q = kernels::qtype_from_ggml(t.type);
      ASSERT_TRUE(q);
      std::vector<uint8_t> ours(t.nbytes);
      kernels::quantize_ref(*q, reinterpret_cast<const float*>(x->data), ours.data(),
                            static_cast<int64_t>(t.elements()));
      const auto* ref = static_cast<const uint8_t*>(t.data);
      const auto& info = kernels::qtype_info(*q);
      for (size_t b = 0; b < t.nbytes; b += static_cast<size_t>(info.block_bytes))
        ASSERT_EQ(std::memcmp(ours.data() + b, ref + b, static_cast<size_t>(info.block_bytes)), 0)
            << "block " << b / static_cast<size_t>(info.block_bytes) << " (row "
            << b / (t.nbytes / 16) << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16);
}

}  // namespace
}  // namespace sandwich
