// The tools that run the engine under mpirun with --pipeline-parallel N, as a user runs them:
// stories260K's layers split over 2 or 3 processes give the output of one process, bit for bit
// (greedy text, the printed perplexity), and what a pipeline cannot run is one line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "command.h"
#include "mpirun.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

std::string bin(const std::string& name) {
  return (bin_dir() / name).string();
}
std::string stories(const char* file) {
  return (data_dir() / "models/stories260K" / file).string();
}
// One thread per process: the test machine may have two cores for three processes.
std::string model_args() {
  return " -t 1 -m " + stories("stories260K.bin") + " --tokenizer " + stories("tok512.bin");
}
std::string mpirun(int np) {
  return mpirun_prefix(np) + " ";
}

#define REQUIRE_MPIRUN()       \
  do {                         \
    SANDWICH_REQUIRE_DATA();   \
    SANDWICH_REQUIRE_MPIRUN(); \
  } while (0)

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(PipelineTools, GenerateGivesTheGreedyTextOfOneProcess) {
  REQUIRE_MPIRUN();
  const std::string generate = bin("sandwich-generate") + model_args() + " -n 200 --temperature 0";
  const CommandResult one = run_command(generate);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, slurp(stories("expected_greedy_200.txt")));
  const CommandResult two = run_command(mpirun(2) + generate + " --pipeline-parallel 2");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  // The worker's start-up line, and the head's line for each node once the workers started.
  EXPECT_EQ(count(two.err, "sandwich-generate: node 1 ("), 1u) << two.err;
  EXPECT_NE(two.err.find("pipeline node 0 ("), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("pipeline node 1 ("), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("layers 3-4 of 5 + head"), std::string::npos) << two.err;
  // Three nodes, a split of one's own, steps cut into micro-batches, and a prompt.
  const std::string prompted = generate + " -q -p 'Once upon a time, there was a big dog'";
  const CommandResult plain = run_command(prompted);
  ASSERT_EQ(plain.code, 0) << plain.err;
  const CommandResult three =
      run_command(mpirun(3) + prompted + " -pp 3 --layer-split 1,3,1 --micro-batches 2");
  ASSERT_EQ(three.code, 0) << three.err;
  EXPECT_EQ(three.out, plain.out);
  // mpirun binds no process when a host has fewer cores than nodes: the nodes share the host's
  // CPUs rather than all pinning to the first one.
  if (std::thread::hardware_concurrency() < 3) {
    EXPECT_NE(three.err.find("unbound: this one takes CPU 1"), std::string::npos) << three.err;
    EXPECT_NE(three.err.find("unbound: this one takes CPU 0"), std::string::npos) << three.err;
  }
}

TEST(PipelineTools, PerplexityPrintsTheFiguresOfOneProcess) {
  REQUIRE_MPIRUN();
  const std::string perplexity = bin("sandwich-perplexity") + model_args() + " -f " +
                                 stories("expected_greedy_200.txt") + " -c 64 -b 40";
  const CommandResult one = run_command(perplexity);
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_NE(one.out.find("Final estimate: PPL = "), std::string::npos) << one.out;
  const CommandResult two = run_command(mpirun(2) + perplexity + " --pipeline-parallel 2");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  EXPECT_NE(two.err.find("pipeline node 1 ("), std::string::npos) << two.err;
  const CommandResult three =
      run_command(mpirun(3) + perplexity + " --pipeline-parallel 3 --micro-batches 3");
  ASSERT_EQ(three.code, 0) << three.err;
  EXPECT_EQ(three.out, one.out);
}

TEST(PipelineTools, BenchEngineRunsOneConfigurationPair) {
  REQUIRE_MPIRUN();
  const std::string bench =
      bin("sandwich-bench") + " engine" + model_args() + " -p 32 -n 8 -r 1 --warmup 0";
  const CommandResult r = run_command(mpirun(2) + bench + " --pipeline-parallel 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| pp32 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tg8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("pipeline node 1 ("), std::string::npos) << r.err;
  const CommandResult one = run_command(mpirun(2) + bench + " -pp 2 --configs 1x1/1x1");
  EXPECT_EQ(one.code, 0) << one.err;
  // The workers serve one pair: a comparison of several is refused before anything loads.
  const CommandResult several = run_command(mpirun(2) + bench + " -pp 2 --configs 1x1,1x1/1x1");
  EXPECT_NE(several.code, 0);
  EXPECT_NE(several.err.find("under --pipeline-parallel the nodes run one configuration pair"),
            std::string::npos)
      << several.err;
}

// Outside mpirun, or where the pipeline cannot run the tool's work: one line, before a load.
TEST(PipelineTools, WhatCannotRunIsOneLine) {
  SANDWICH_REQUIRE_DATA();
  expect_one_line_error(
      run_command(bin("sandwich-generate") + model_args() + " --pipeline-parallel 2"),
      "needs 2 processes, one per node: start it with mpirun -np 2");
  expect_one_line_error(run_command(bin("sandwich-perplexity") + model_args() + " -f " +
                                    stories("expected_greedy_200.txt") + " -pp 2"),
                        "start it with mpirun -np 2");
  expect_one_line_error(run_command(bin("sandwich-generate") + model_args() + " --reference -pp 2"),
                        "leave out --pipeline-parallel");
}

}  // namespace
}  // namespace sandwich::test
