// Must-show of issue 17: dequantize_ref gives llama.cpp's floats bit for bit, for blocks that
// llama.cpp's own quantizer wrote (tests/data/quant/README.md says how they were made); and
// quantize_ref, given the same f32 rows, writes the very blocks llama.cpp's reference does.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// One tensor of the data set: llama.cpp's blocks of it and the hash of llama.cpp's floats.
struct Entry {
  std::string file, name, type, hash;
  int64_t n = 0;
  size_t offset = 0;  // bytes into `file`: its tensors follow each other in list order
};

std::vector<Entry> read_list(const std::filesystem::path& dir) {
  std::ifstream list(dir / "llama_cpp_dequant.txt");
  if (!list) throw std::runtime_error("cannot open the list in " + dir.string());
  std::vector<Entry> out;
  std::map<std::string, size_t> next;
  Entry e;
  while (list >> e.file >> e.name >> e.type >> e.n >> e.hash) {
    const auto q = kernels::qtype_from_name(e.type);
    if (!q) throw std::runtime_error("unknown type " + e.type);
    const auto& info = kernels::qtype_info(*q);
    e.offset = next[e.file];
    next[e.file] += static_cast<size_t>(e.n / info.block_elems * info.block_bytes);
    out.push_back(e);
  }
  return out;
}

constexpr int64_t kRows = 16, kRowLen = 256;

TEST(DequantizeLikeLlamaCpp, EveryTypeBitForBit) {
  const auto dir = test::source_dir() / "tests/data/quant";
  std::set<std::string> types;
  int checked = 0;
  for (const Entry& e : read_list(dir)) {
    SCOPED_TRACE(e.file + " " + e.name);
    const auto q = kernels::qtype_from_name(e.type);
    ASSERT_TRUE(q);
    ASSERT_EQ(e.n, kRows * kRowLen);
    const auto blocks = read_bytes(dir / e.file);
    const auto& info = kernels::qtype_info(*q);
    ASSERT_LE(e.offset + static_cast<size_t>(e.n / info.block_elems * info.block_bytes),
              blocks.size());
    std::vector<float> y(static_cast<size_t>(e.n));
    kernels::dequantize_ref(*q, blocks.data() + e.offset, y.data(), e.n);
    std::ostringstream ours;
    ours << std::hex;
    ours.width(16);
    ours.fill('0');
    ours << fnv1a(y.data(), y.size() * sizeof(float));
    EXPECT_EQ(ours.str(), e.hash);
    types.insert(std::string(info.name));
    ++checked;
  }
  EXPECT_EQ(checked, 16);
  EXPECT_EQ(types.size(), 8u);  // every file type; Q8_K is an activation type, never in a file
}

TEST(QuantizeLikeLlamaCpp, SameBlocksFromTheSameRows) {
  const auto dir = test::source_dir() / "tests/data/quant";
  // input.f32 holds the rows of the tensors in the order each .blocks file lists them.
  const auto input = read_bytes(dir / "input.f32");
  ASSERT_EQ(input.size(), 2 * kRows * kRowLen * sizeof(float));
  std::map<std::string, int> tensor_of_file;
  int checked = 0;
  for (const Entry& e : read_list(dir)) {
    SCOPED_TRACE(e.file + " " + e.name);
    const int index = tensor_of_file[e.file]++;
    const auto q = kernels::qtype_from_name(e.type);
    ASSERT_TRUE(q);
    const auto& info = kernels::qtype_info(*q);
    const auto theirs = read_bytes(dir / e.file);
    const size_t nbytes = static_cast<size_t>(e.n / info.block_elems * info.block_bytes);
    std::vector<float> x(static_cast<size_t>(e.n));
    std::memcpy(x.data(), input.data() + static_cast<size_t>(index) * x.size() * sizeof(float),
                x.size() * sizeof(float));
    std::vector<uint8_t> ours(nbytes);
    kernels::quantize_ref(*q, x.data(), ours.data(), e.n);
    const uint8_t* ref = theirs.data() + e.offset;
    for (size_t b = 0; b < nbytes; b += static_cast<size_t>(info.block_bytes))
      ASSERT_EQ(std::memcmp(ours.data() + b, ref + b, static_cast<size_t>(info.block_bytes)), 0)
          << "block " << b / static_cast<size_t>(info.block_bytes) << " (row "
          << b / (nbytes / kRows) << ")";
    ++checked;
  }
  EXPECT_EQ(checked, 16);
}

}  // namespace
}  // namespace sandwich::engine
