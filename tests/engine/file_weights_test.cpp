// file_weights: a model file's bytes per matrix weight from its header alone equal what loading
// it stores (the simulator streams that many bytes per weight).
#include "engine/formats/file_weights.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "engine/formats/model.h"
#include "quant_files.h"

namespace sandwich::engine {
namespace {

double loaded_bytes_per_weight(const std::filesystem::path& file) {
  LoadOptions o;
  o.model = file.string();
  o.threads = 1;
  o.require_tokenizer = false;
  return load_model(o)->bytes_per_weight;
}

TEST(FileWeights, QuantizedFilesStreamWhatTheLoaderStores) {
  test::TempDir dir;
  for (const char* preset : {"q4_k_m", "q5_k_s", "q6_k", "q8_0", "q4_0", "q5_1"}) {
    SCOPED_TRACE(preset);
    const auto file = test::write_tiny_quantized(dir, preset);
    const auto w = file_weights(file);
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->quantized);
    EXPECT_LT(w->bytes_per_weight, 1.1);
    EXPECT_DOUBLE_EQ(w->bytes_per_weight, loaded_bytes_per_weight(file));
  }
}

TEST(FileWeights, UnquantizedFilesTakeTheLoadersStorage) {
  test::TempDir dir;
  const ModelConfig c = test::tiny_quant_config(dir);
  for (WeightDType t : {WeightDType::BF16, WeightDType::F32}) {
    const auto file = dir / (t == WeightDType::F32 ? "f32.gguf" : "bf16.gguf");
    write_dummy_gguf(c, t, default_dummy_vocab(c), 1, file);
    const auto w = file_weights(file);
    ASSERT_TRUE(w);
    EXPECT_FALSE(w->quantized);
    EXPECT_EQ(w->bytes_per_weight, t == WeightDType::F32 ? 4 : 2);
    EXPECT_DOUBLE_EQ(w->bytes_per_weight, loaded_bytes_per_weight(file));
  }
}

TEST(FileWeights, OnlyGgufFilesSayAnything) {
  test::TempDir dir;
  EXPECT_FALSE(file_weights("llama3-8b"));  // a preset: --dtype decides
  EXPECT_FALSE(file_weights(dir / "missing.gguf"));
  EXPECT_FALSE(file_weights(dir.path()));
  std::ofstream(dir / "config.json") << "{}";
  EXPECT_FALSE(file_weights(dir / "config.json"));
  // A damaged header is the reader's one-line error, as loading would give.
  const auto good = test::write_tiny_quantized(dir, "q4_k_m");
  const auto bad = test::truncated(dir, good, test::read_bytes(good).size() - 100);
  try {
    file_weights(bad);
    ADD_FAILURE() << "a truncated header was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string() + ": "), std::string::npos) << e.what();
  }
}

TEST(FileWeights, RowsThatAreNotWholeBlocksNameTheTensor) {
  test::TempDir dir;
  const auto good = test::write_tiny_quantized(dir, "q8_0");
  // attn_q as 1024 rows of 48: whole blocks in all (the reader's check), but not in a row.
  const size_t pos = test::tensor_header_pos(test::read_bytes(good), "blk.0.attn_q.weight") + 4;
  const auto bad = test::patched(dir, good, "cols.gguf", pos,
                                 {48, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x04, 0, 0, 0, 0, 0, 0});
  try {
    file_weights(bad);
    ADD_FAILURE() << "rows of 48 q8_0 values were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string() + ": tensor 'blk.0.attn_q.weight': "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sandwich::engine
