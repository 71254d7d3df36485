// sandwichd serving a Q4_K_M GGUF file on the quantized kernels: chat, streaming, two ranks.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/formats/dummy_model.h"
#include "engine/formats/quantize_model.h"
#include "http_test_client.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

// Heads of 64, 2 KV heads, dim = FFN = 64 x heads: with 8 heads each of 2 ranks holds whole
// 256-value super-blocks; with 4 the output projection's K shards would be half of one.
std::filesystem::path q4_k_m_model(const TempDir& dir, int heads) {
  const auto folder = dir / ("heads-" + std::to_string(heads));
  std::filesystem::create_directories(folder);
  nlohmann::json cfg = {{"model_type", "llama"},       {"hidden_size", 64 * heads},
                        {"num_hidden_layers", 2},      {"num_attention_heads", heads},
                        {"num_key_value_heads", 2},    {"intermediate_size", 512},
                        {"vocab_size", 320},           {"max_position_embeddings", 256},
                        {"tie_word_embeddings", false}};
  std::ofstream(folder / "config.json") << cfg.dump();
  const engine::ModelConfig c = engine::read_model_config(folder);
  const auto file = folder / "tiny-Q4_K_M.gguf";
  engine::write_dummy_gguf_quantized(c, *engine::quant_preset("q4_k_m"),
                                     engine::default_dummy_vocab(c), 1, file);
  return file;
}

json chat(int n, bool stream) {
  return {{"model", "tiny"},
          {"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}},
          {"max_tokens", n},
          {"temperature", 0},
          {"stream", stream}};
}

// The streamed chat's content deltas, joined.
std::string streamed_text(Client c) {
  const auto events = c.stream("/v1/chat/completions", chat(16, true));
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json ch = json::parse(events[i]);
    if (ch["choices"][0]["delta"].contains("content"))
      text += ch["choices"][0]["delta"]["content"].get<std::string>();
  }
  return text;
}

TEST(SandwichdQuant, ChatAndStreamingOnOneRankAndTwo) {
  TempDir dir;
  const auto file = q4_k_m_model(dir, 8);
  std::string texts[2];
  const char* configs[2] = {"1x2", "2x1"};
  for (int i = 0; i < 2; ++i) {
    Daemon d("--model " + file.string() + " --served-model-name tiny --prefill-config " +
             configs[i] + " --decode-config " + configs[i]);
    ASSERT_NE(d.port(), 0) << d.log();
    EXPECT_NE(d.log().find("weights q4_k x 13, f32 x 5, q6_k x 3; "), std::string::npos) << d.log();
    if (i == 1) {
      // The two ranks' quantized weights are placed on their NUMA node like BF16 ones.
      EXPECT_NE(d.log().find("sandwichd: weights of 2 ranks on NUMA "), std::string::npos)
          << d.log();
      EXPECT_NE(d.log().find(" (the loaded weights, in place)"), std::string::npos) << d.log();
      EXPECT_EQ(d.log().find("not placed"), std::string::npos) << d.log();
    }
    const auto r = Client(d.port()).post("/v1/chat/completions", chat(16, false));
    ASSERT_EQ(r.status, 200) << r.body;
    texts[i] = r.j()["choices"][0]["message"]["content"].get<std::string>();
    EXPECT_EQ(r.j()["usage"]["completion_tokens"], 16) << r.body;
    EXPECT_EQ(streamed_text(Client(d.port())), texts[i]) << configs[i];
  }
  EXPECT_EQ(texts[1], texts[0]);
}

TEST(SandwichdQuant, ASplitThatCutsABlockExitsWithOneLine) {
  TempDir dir;
  const auto file = q4_k_m_model(dir, 4);
  const std::string cmd = (bin_dir() / "sandwichd").string() + " --port 0 --model " +
                          file.string() + " --decode-config 2x1 2>" + (dir / "e").string();
  const int st = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 1);
  std::ifstream in(dir / "e");
  const std::string err{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(err.find("sandwichd: error: 2 tensor-parallel ranks would cut quantized blocks: "
                     "blk.0.attn_output.weight (q4_k, 256-value blocks, 256 input columns) would "
                     "be cut at column 128 (a shard must hold whole blocks); use 1 rank\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("listening on"), std::string::npos) << err;
}

// A damaged quantized file stops sandwichd before it listens, with the loader's one line.
TEST(SandwichdQuant, ADamagedQuantizedFileExitsWithOneLine) {
  TempDir dir;
  const auto good = q4_k_m_model(dir, 8);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  const auto run = [&](const std::string& name, const std::string& b) {
    const auto file = dir / name;
    std::ofstream(file, std::ios::binary) << b;
    const std::string cmd = (bin_dir() / "sandwichd").string() + " --port 0 --model " +
                            file.string() + " 2>" + (dir / "e").string();
    const int st = std::system(cmd.c_str());
    EXPECT_EQ(WEXITSTATUS(st), 1) << name;
    std::ifstream e(dir / "e");
    const std::string log{std::istreambuf_iterator<char>(e), {}};
    // The error is one line and the last (only the start-up log line comes before it).
    const size_t at = log.find("sandwichd: error: ");
    EXPECT_NE(at, std::string::npos) << log;
    const std::string tail = at == std::string::npos ? "" : log.substr(at);
    EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n'), 1) << log;
    EXPECT_EQ(log.find("listening on"), std::string::npos) << log;
    return tail;
  };
  std::string err = run("cut.gguf", bytes.substr(0, bytes.size() - 1000));
  EXPECT_NE(err.find("truncated file: tensor 'output.weight' (q6_k, "), std::string::npos) << err;
  // The type id sits after the name, n_dims (4 bytes) and two dims (16 bytes): q3_k (11).
  std::string retyped = bytes;
  const std::string name = "blk.0.attn_q.weight";
  const size_t pos = retyped.find(name) + name.size() + 20;
  retyped.replace(pos, 4, std::string("\x0b\0\0\0", 4));
  err = run("q3k.gguf", retyped);
  EXPECT_NE(err.find("tensor 'blk.0.attn_q.weight' is q3_k, which sandwich does not support"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace sandwich::test
