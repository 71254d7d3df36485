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
}

TEST(SandwichdFlags, Version) {
  const CommandResult r = run_command(sandwichd() + " --version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, version_line("sandwichd") + "\n");
}

}  // namespace
}  // namespace sandwich::test
