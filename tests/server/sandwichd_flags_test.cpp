// sandwichd's command line as vLLM and llama.cpp users type it.
#include <gtest/gtest.h>

#include "command.h"
#include "common/version.h"
#include "http_test_client.h"

namespace sandwich::test {
namespace {

std::string sandwichd() {
  return (bin_dir() / "sandwichd").string();
}

TEST(SandwichdFlags, PositionalModelAndCtxSize) {
  SANDWICH_REQUIRE_DATA();
  const std::string dir = (data_dir() / "models/stories260K").string();
  // As `vllm serve MODEL` and llama-server's -c.
  Daemon d(dir + "/stories260K.bin --tokenizer " + dir +
           "/tok512.bin --served-model-name stories -c 128");
  ASSERT_NE(d.port(), 0);
  const HttpResult r = Client(d.port()).get("/v1/models");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.j()["data"][0]["max_model_len"], 128);
  EXPECT_EQ(r.j()["data"][0]["id"], "stories");
  EXPECT_EQ(Client(d.port()).get("/version").j()["version"], project_version());
}

// Served names with a slash, as Hugging Face ids: GET /v1/models/{id} takes the rest of the path.
TEST(SandwichdFlags, AServedNameWithASlashIsRetrievedByItsPath) {
  SANDWICH_REQUIRE_DATA();
  const std::string dir = (data_dir() / "models/stories260K").string();
  Daemon d(dir + "/stories260K.bin --tokenizer " + dir +
           "/tok512.bin --served-model-name meta-llama/Llama-3-8B");
  ASSERT_NE(d.port(), 0);
  Client c(d.port());
  for (const char* path :
       {"/v1/models/meta-llama/Llama-3-8B", "/v1/models/meta-llama%2FLlama-3-8B"}) {
    const HttpResult r = c.get(path);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.j()["id"], "meta-llama/Llama-3-8B") << path;
    EXPECT_EQ(r.j()["object"], "model") << path;
  }
  const HttpResult r = c.get("/v1/models/meta-llama");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.j()["error"]["code"], "model_not_found") << r.body;
}

TEST(SandwichdFlags, MistakesAreOneLine) {
  expect_one_line_error(
      run_command(sandwichd() + " a.gguf --model b.gguf"),
      "sandwichd: error: the model is given twice: 'a.gguf' and --model 'b.gguf'");
  expect_one_line_error(run_command(sandwichd() + " a.gguf b.gguf"),
                        "unexpected argument 'b.gguf'");
  expect_one_line_error(run_command(sandwichd() + " --max-model-lenn 5"),
                        "unknown option --max-model-lenn (did you mean --max-model-len?)");
  expect_one_line_error(run_command(sandwichd() + " --model m --allowed-origins ' , '"),
                        "--allowed-origins needs at least one origin");
  expect_one_line_error(run_command(sandwichd()), "--model is required");
  expect_one_line_error(run_command(sandwichd() + " --model m --kv-cache-dtype fp16"),
                        "sandwichd: error: --kv-cache-dtype must be auto, bfloat16, bf16, float32, "
                        "f32 or fp32, got 'fp16'");
  expect_one_line_error(run_command(sandwichd() + " --model m --allreduce ring"),
                        "sandwichd: error: --allreduce must be rank-shifted or naive, got 'ring'");
}

// vLLM's --kv-cache-dtype: BF16 by default; the same --kv-cache-memory holds twice the blocks of
// F32 ones, as the start-up log and /metrics say (stories260K: 5 layers of 4 KV heads of 8, so an
// F32 block of 16 tokens is 20480 bytes: the budget is 100 of them).
TEST(SandwichdFlags, KvCacheDtype) {
  SANDWICH_REQUIRE_DATA();
  const std::string dir = (data_dir() / "models/stories260K").string();
  const std::string base = dir + "/stories260K.bin --tokenizer " + dir +
                           "/tok512.bin -c 128 -t 1 --kv-cache-memory 2048000";
  auto blocks = [](const Daemon& d) {
    const std::string m = Client(d.port()).get("/metrics").body;
    const size_t at = m.find("\nsandwich:kv_cache_blocks_total{");
    if (at == std::string::npos) {
      ADD_FAILURE() << m;
      return 0;
    }
    return std::stoi(m.substr(m.find("} ", at) + 2));
  };
  int bf16_blocks = 0;
  for (const char* flag : {"", " --kv-cache-dtype auto", " --kv-cache-dtype bfloat16"}) {
    Daemon d(base + flag);
    ASSERT_NE(d.port(), 0);
    EXPECT_NE(d.log().find("KV cache: bf16, "), std::string::npos) << d.log();
    bf16_blocks = blocks(d);
  }
  Daemon d(base + " --kv-cache-dtype fp32");
  ASSERT_NE(d.port(), 0);
  EXPECT_NE(d.log().find("KV cache: f32, "), std::string::npos) << d.log();
  EXPECT_EQ(bf16_blocks, 2 * blocks(d));
  EXPECT_GT(bf16_blocks, 0);
}

// The README's "Coming from vLLM / llama.cpp" table: what it maps is accepted, GPU offload of
// nothing is a no-op with a note, the rest is refused naming what to use instead.
TEST(SandwichdFlags, PeerFlagsOfTheReadmeTable) {
  SANDWICH_REQUIRE_DATA();
  const std::string dir = (data_dir() / "models/stories260K").string();
  const std::string base = dir + "/stories260K.bin --tokenizer " + dir + "/tok512.bin -c 128";
  // -np 2: the default KV cache holds 2 sequences of 128 tokens, 16 blocks of 16.
  Daemon d(base + " -np 2 -b 64 --metrics -ngl 0 --n-gpu-layers 0 --disable-log-stats");
  ASSERT_NE(d.port(), 0) << d.log();
  EXPECT_NE(d.log().find("KV cache: bf16, 16 blocks "), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("INFO sandwichd: -ngl 0: nothing to offload; this is a CPU server"),
            std::string::npos)
      << d.log();
  EXPECT_EQ(Client(d.port()).get("/metrics").status, 200);
  for (const char* zero : {" -np 0", " --parallel 0", " -b 0", " --batch-size 0"})
    expect_one_line_error(run_command(sandwichd() + " --model m" + zero),
                          "thread counts, limits and timeouts must be positive");
  const std::pair<const char*, const char*> refused[] = {
      {" -ngl 33", "-ngl 33: no GPU offload; this is a CPU server (give 0, or leave it out)"},
      {" --n-gpu-layers all", "-ngl all: no GPU offload"},
      {" --lora a.gguf", "--lora: LoRA adapters are not supported"},
      {" --enable-lora", "--enable-lora: LoRA adapters are not supported"},
      {" --gpu-memory-utilization 0.9", "--kv-cache-memory BYTES"},
      {" -tp 2", "--prefill-config/--decode-config RxT"},
      {" -ctk f16", "-ctk: the KV cache's type is --kv-cache-dtype bf16|f32"},
      {" --uvicorn-log-level debug", "--log-level debug|info|warning|error"}};
  for (const auto& [flag, message] : refused)
    expect_one_line_error(run_command(sandwichd() + " --model m" + flag), message);
}

// vLLM refuses a --max-model-len past the model's context (unless told otherwise); clamping it
// silently left the user believing in a context the model does not have.
TEST(SandwichdFlags, ContextLongerThanTheModelsIsRefused) {
  SANDWICH_REQUIRE_DATA();
  const std::string dir = (data_dir() / "models/stories260K").string();
  const CommandResult r = run_command(sandwichd() + " " + dir + "/stories260K.bin --tokenizer " +
                                      dir + "/tok512.bin --port 0 -c 513");
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.code, 128) << r.err;
  EXPECT_NE(r.err.find("sandwichd: error: max_model_len 513 (-c, --max-model-len) is larger than "
                       "the model's context (512 tokens); give at most 512, or leave it out"),
            std::string::npos)
      << r.err;
}

TEST(SandwichdFlags, Version) {
  const CommandResult r = run_command(sandwichd() + " --version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, version_line("sandwichd") + "\n");
}

}  // namespace
}  // namespace sandwich::test
