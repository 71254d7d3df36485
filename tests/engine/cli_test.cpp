// The command-line tools as a user runs them: exact stdout, one-line errors, exit codes.
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "command.h"
#include "common/version.h"
#include "covering_schedule_table.h"
#include "dummy_llama.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using test::CommandResult;
using test::expect_one_line_error;

CommandResult run_cmd(const std::string& args) {
  return test::run_command(args);
}

std::string bin(const char* name) {
  return (test::bin_dir() / name).string();
}
std::string stories() {
  return (test::data_dir() / "models/stories260K").string();
}
std::string generate() {
  return bin("sandwich-generate") + " --model " + stories() + "/stories260K.bin --tokenizer " +
         stories() + "/tok512.bin";
}

std::string expected_greedy() {
  std::ifstream in(test::data_dir() / "models/stories260K/expected_greedy_200.txt",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// llama.cpp's names mean what ours do.
TEST(Cli, LlamaCppFlagNamesAreAliases) {
  const CommandResult ours =
      run_cmd(generate() + " -q --max-tokens 30 --temperature 0 --repetition-penalty 3");
  ASSERT_EQ(ours.code, 0) << ours.err;
  const std::string model =
      "-m " + stories() + "/stories260K.bin --tokenizer " + stories() + "/tok512.bin";
  const CommandResult theirs = run_cmd(bin("sandwich-generate") + " " + model +
                                       " -q --n-predict 30 --temp 0 --repeat-penalty 3");
  ASSERT_EQ(theirs.code, 0) << theirs.err;
  EXPECT_EQ(theirs.out, ours.out);
  const CommandResult plain = run_cmd(generate() + " -q -n 30 --temp 0");
  EXPECT_NE(plain.out, ours.out);  // the penalty did something
}

TEST(Cli, EveryToolPrintsItsVersion) {
  // A command's --version names its program.
  for (const std::string tool :
       {"sandwich-generate", "sandwich-model", "sandwich-perplexity", "sandwich-bench engine"}) {
    const CommandResult r = run_cmd(bin(tool.c_str()) + " --version");
    EXPECT_EQ(r.code, 0) << tool;
    const std::string name = tool.substr(0, tool.find(' '));
    EXPECT_EQ(r.out.rfind(name + " " + project_version() + " (git ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(" build)\n"), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(Cli, GenerateReproducesTheReferenceGreedyOutput) {
  SANDWICH_REQUIRE_DATA();
  CommandResult r = run_cmd(generate() + " -n 200 --temperature 0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected_greedy());
  EXPECT_NE(r.err.find("tok/s"), std::string::npos);  // statistics go to stderr
}

// The KV cache is BF16 unless told: F32 gives the reference's text too, and the statistics name
// the cache.
TEST(Cli, GenerateOverEitherKVCache) {
  SANDWICH_REQUIRE_DATA();
  for (const std::string dtype : {"", "f32", "bf16"}) {
    const CommandResult r = run_cmd(generate() + " -n 200 --temperature 0" +
                                    (dtype.empty() ? "" : " --kv-cache-dtype " + dtype));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expected_greedy()) << dtype;
    EXPECT_NE(r.err.find("kv cache: " + (dtype.empty() ? "bf16" : dtype) + ", "), std::string::npos)
        << r.err;
  }
  const CommandResult bad = run_cmd(generate() + " --kv-cache-dtype int8");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--kv-cache-dtype must be auto, bfloat16, bf16, float32, f32 or fp32, "
                         "got 'int8'"),
            std::string::npos)
      << bad.err;
}

TEST(Cli, GenerateOnTheReferencePathToo) {
  SANDWICH_REQUIRE_DATA();
  CommandResult r = run_cmd(generate() + " -n 200 --temperature 0 --reference -t 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected_greedy());
}

TEST(Cli, GenerateInTheBatchInvariantModeToo) {
  SANDWICH_REQUIRE_DATA();
  CommandResult r = run_cmd(generate() + " -n 200 --temperature 0 --batch-invariant");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected_greedy());
}

// llama2.c's run.c (`run stories260K.bin -z tok512.bin -t 0 -n 200 -i "Once upon a time, there was
// a big dog"`) prints the prompt and then this continuation: 200 positions in all, the prompt is
// 11 tokens after BOS, so 189 are generated.
constexpr const char* kRunCContinuation =
    " named Max. Max loved to play with his toys and run around. One day, Max saw a big box in the "
    "park. He wanted to play with it, but he was too small.\n"
    "Max wanted to play with the box. He asked his friend, a little bird, \"Can I play with you?\" "
    "The boy said, \"Yes, I can help you.\" Max was happy to help the bird.\n"
    "The bird flew away, and Max flew away. The bird was very happy. Max and the bird became best "
    "friends. They played together every day.\n";

TEST(Cli, PromptContinuesLikeTheReferenceImplementation) {
  SANDWICH_REQUIRE_DATA();
  CommandResult r = run_cmd(
      generate() + " -n 189 --temperature 0 --prompt 'Once upon a time, there was a big dog'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kRunCContinuation));
}

// A tuned-schedule table whose (non-default, valid) schedules cover every GEMM: the same text,
// on one rank of two threads and on two forked ranks (which inherit the table).
TEST(Cli, GenerateWithATunedScheduleTableGivesTheSameText) {
  SANDWICH_REQUIRE_DATA();
  for (const std::string config : {"-t 2", "--prefill-config 2x1 --decode-config 2x1"}) {
    test::TempDir dir;
    const std::string prompted = generate() + " " + config +
                                 " -n 189 --temperature 0 --prompt 'Once upon a time, there was "
                                 "a big dog'";
    ASSERT_GT(test::write_covering_schedule_table(prompted, dir / "t.json"), 0) << config;
    CommandResult r = run_cmd(prompted + " --schedules " + (dir / "t.json").string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, std::string(kRunCContinuation)) << config;
    EXPECT_EQ(r.err.find("sandwich: schedules:"), std::string::npos) << config << "\n" << r.err;
    r = run_cmd(generate() + " " + config + " -n 200 --temperature 0 --schedules " +
                (dir / "t.json").string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expected_greedy()) << config;
    EXPECT_EQ(r.err.find("sandwich: schedules:"), std::string::npos) << config << "\n" << r.err;
    // Through a plan file naming the table relative to its folder.
    std::ofstream(dir / "plan.json")
        << R"({"prefill": "1x2", "decode": "1x2", "schedules": "t.json"})";
    if (config == "-t 2") {
      r = run_cmd(generate() + " -n 200 --temperature 0 --plan " + (dir / "plan.json").string());
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(r.out, expected_greedy());
      EXPECT_EQ(r.err.find("sandwich: schedules:"), std::string::npos) << r.err;
    }
  }
}

// A bad table is one warning, never an error: the cost model's schedules, the same text.
TEST(Cli, GenerateWithABadScheduleTableWarnsAndGivesTheSameText) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  std::ofstream(dir / "corrupt.json") << "{\"format\": ";
  ScheduleTable foreign = test::empty_schedule_table();
  foreign.machine.cpu = "Some Other CPU";
  write_schedule_table(foreign, dir / "foreign.json");
  for (const std::string name : {"missing.json", "corrupt.json", "foreign.json"}) {
    CommandResult r =
        run_cmd(generate() + " -q -n 200 --temperature 0 --schedules " + (dir / name).string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expected_greedy()) << name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("sandwich: schedules: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
  }
}

TEST(Cli, OutputIdsPrintsTokenIds) {
  SANDWICH_REQUIRE_DATA();
  CommandResult r = run_cmd(generate() + " -n 5 --temperature 0 --output-ids");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream ids(r.out);
  int n = 0;
  for (int id; ids >> id; ++n) EXPECT_TRUE(id >= 0 && id < 512);
  EXPECT_EQ(n, 5);
}

TEST(Cli, SeededSamplingIsReproducible) {
  SANDWICH_REQUIRE_DATA();
  CommandResult a = run_cmd(generate() + " -n 40 --temperature 0.9 --top-p 0.9 --seed 42");
  CommandResult b = run_cmd(generate() + " -n 40 --temperature 0.9 --top-p 0.9 --seed 42");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, BadInputGivesOneLineAndNonZeroExit) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  expect_one_line_error(run_cmd(bin("sandwich-generate")), "--model is required");
  expect_one_line_error(run_cmd(bin("sandwich-generate") + " --model /nonexistent/model.gguf"),
                        "not found");
  expect_one_line_error(run_cmd(generate() + " --temperature -1"), "temperature");
  expect_one_line_error(run_cmd(generate() + " -n abc"), "expects an integer");
  expect_one_line_error(run_cmd(generate() + " --bogus"), "unknown option --bogus");
  std::ofstream(dir / "junk.gguf") << "GGUF but then nothing sensible";
  expect_one_line_error(
      run_cmd(bin("sandwich-generate") + " --model " + (dir / "junk.gguf").string()), "junk.gguf");
  expect_one_line_error(
      run_cmd(bin("sandwich-generate") + " --model " + stories() + "/stories260K.bin"),
      "--tokenizer");
  std::string long_prompt;
  for (int i = 0; i < 700; ++i) long_prompt += "dog ";
  expect_one_line_error(run_cmd(generate() + " --prompt '" + long_prompt + "'"), "context");
  expect_one_line_error(
      run_cmd(bin("sandwich-model") + " make --preset nope -o " + (dir / "x.gguf").string()),
      "unknown model preset 'nope'");
  expect_one_line_error(run_cmd(bin("sandwich-model") + " frobnicate"), "unknown command");
  expect_one_line_error(run_cmd(bin("sandwich-model") + " detokenize --tokenizer " + stories() +
                                "/tok512.bin --ids '1 99999'"),
                        "outside the vocabulary");
}

// Input that used to be ignored or misread: each is now one line on stderr and a non-zero exit.
TEST(Cli, StrayOrOutOfRangeInputIsRejected) {
  SANDWICH_REQUIRE_DATA();
  test::TempDir dir;
  std::filesystem::create_directories(dir / "folder");
  const std::string folder = (dir / "folder").string();
  expect_one_line_error(run_cmd(generate() + " --prompt-file " + folder),
                        "prompt file " + folder + ": a directory, not a file");
  expect_one_line_error(run_cmd(generate() + " --plan " + folder),
                        "plan " + folder + ": a directory, not a file");
  expect_one_line_error(run_cmd(generate() + " -t 1000"), "--threads must be 0 (all cores) to");
  expect_one_line_error(run_cmd(generate() + " -t -3"), "got -3");
  expect_one_line_error(run_cmd(generate() + " -n 5 bogus"), "unexpected argument 'bogus'");
  expect_one_line_error(run_cmd(generate() + " -- -n"), "unexpected argument '-n'");
  expect_one_line_error(run_cmd(generate() + " --prefill-config 99999999999x1"), "99999999999");
  expect_one_line_error(run_cmd(bin("sandwich-model") + " info a b"), "unexpected argument 'b'");
  expect_one_line_error(
      run_cmd(bin("sandwich-model") + " tokenize --tokenizer " + stories() + "/tok512.bin x"),
      "unexpected argument 'x'");
  std::ofstream(dir / "tokenizer.json") << R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},
    "added_tokens":[{"id":-5,"content":"<x>"}]})";
  expect_one_line_error(run_cmd(bin("sandwich-model") + " tokenize --tokenizer " +
                                (dir / "tokenizer.json").string() + " --text a"),
                        "tokenizer.json: added token '<x>' has id -5");
}

TEST(Cli, NoCommandIsAUsageError) {
  for (const char* tool : {"sandwich-model", "sandwich-generate"}) {
    const CommandResult r = run_cmd(bin(tool));
    EXPECT_NE(r.code, 0) << tool;
    EXPECT_LT(r.code, 128) << tool;
    EXPECT_TRUE(r.out.empty()) << tool << ": " << r.out;
    EXPECT_EQ(r.err.rfind(std::string(tool) + ": error: ", 0), 0u) << r.err;
  }
  const CommandResult m = run_cmd(bin("sandwich-model"));
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.err.find("no command given"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("usage: sandwich-model"), std::string::npos)
      << m.err;  // usage follows the error line
  EXPECT_EQ(run_cmd(bin("sandwich-model") + " --help").code, 0);
}

TEST(Cli, ModelInfoAndTokenizerCommands) {
  SANDWICH_REQUIRE_DATA();
  CommandResult info = run_cmd(bin("sandwich-model") + " info " + stories() + "/stories260K.bin");
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("layers:        5"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("f32 x"), std::string::npos) << info.out;
  CommandResult tok = run_cmd(bin("sandwich-model") + " tokenize --tokenizer " + stories() +
                              "/tok512.bin --text 'Once upon a time'");
  ASSERT_EQ(tok.code, 0) << tok.err;
  CommandResult back = run_cmd(bin("sandwich-model") + " detokenize --tokenizer " + stories() +
                               "/tok512.bin --ids '" + tok.out.substr(0, tok.out.size() - 1) + "'");
  ASSERT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(back.out, "Once upon a time\n");
}

TEST(Cli, MakeWritesAGgufThatLoads) {
  test::TempDir dir;
  const std::string out = (dir / "m.gguf").string();
  test::write_llama_config(dir.path(), {64, 2, 4, 2, 96, 1000, 256},
                           {{"tokenizer_family", "llama2-spm"}});
  CommandResult make = run_cmd(bin("sandwich-model") + " make --preset " +
                               (dir / "config.json").string() + " --dtype bf16 -o " + out);
  ASSERT_EQ(make.code, 0) << make.err;
  CommandResult info = run_cmd(bin("sandwich-model") + " info " + out);
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("bf16 x"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("tokenizer:     1000 tokens"), std::string::npos) << info.out;
  // Dummy weights given as a file and as --load-format dummy with the same seed: same greedy ids.
  CommandResult a = run_cmd(bin("sandwich-generate") + " --model " + out +
                            " -n 12 --temperature 0 --output-ids --prompt 'hello world'");
  CommandResult b = run_cmd(bin("sandwich-generate") + " --model " + dir.path().string() +
                            " --load-format dummy --dtype bf16 "
                            "--tokenizer " +
                            out + " -n 12 --temperature 0 --output-ids --prompt 'hello world'");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

}  // namespace
}  // namespace sandwich::engine
