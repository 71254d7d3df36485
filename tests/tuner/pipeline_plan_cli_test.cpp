// sandwich-tune plan for a cluster: the table of pipeline depths on shipped clusters, and a
// hostfile's link measured over MPI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "command.h"
#include "test_data.h"
#include "tune_command.h"

namespace sandwich::tuner {
namespace {

using test::CommandResult;
using test::tune;

TEST(PipelinePlanCli, TwoNodesOf70bPrintEveryDepthAndChooseTwo) {
  const CommandResult r = tune(
      "plan --model llama3-70b --load-format dummy --topology xeon-emr-16c-2n-25gbe --dry-run "
      "--quiet --trace lmsys --trace-samples 8");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"pipeline   2 nodes over 25GbE (25 us, 2.9 GB/s)",
                        "P = 1 (2 pipelines of 1 node): layers 80, weights per node 141.1 GB",
                        "does not fit: node 0 needs 141.1 GB of weights",
                        "P = 2 (1 pipeline of 2 nodes): layers 41+39", "tokens/s with chunks",
                        "TTFT ", "batch 1: ", "batch 16: ", "2 micro-batches, utilization ",
                        "chosen     P = 2: ", "P = 1 does not fit"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(PipelinePlanCli, FourNodesCompareEveryDepth) {
  const CommandResult r = tune(
      "plan --model llama3-70b --load-format dummy --topology xeon-emr-16c-4n-100gbe --dry-run "
      "--quiet --trace lmsys --trace-samples 8");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s :
       {"over 100GbE", "P = 1 (4 pipelines", "P = 2 (2 pipelines of 2 nodes)",
        "P = 3 (1 pipeline of 3 nodes)", "P = 4 (1 pipeline of 4 nodes)", "chosen     P = "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(PipelinePlanCli, OneMachineHasNoPipelineTable) {
  const CommandResult r = tune(
      "plan --model llama3-8b --load-format dummy --topology xeon-emr-16c --dry-run --quiet "
      "--trace lmsys --trace-samples 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("pipeline "), std::string::npos) << r.out;
}

TEST(PipelinePlanCli, HostfileAndTopologyAreOneLineErrors) {
  test::TempDir dir;
  std::ofstream(dir / "hosts") << "localhost slots=2\n";
  test::expect_tune_error(tune("plan --model llama-160m --load-format dummy --dry-run --hostfile " +
                               (dir / "hosts").string() + " --topology xeon-emr-16c"),
                          "drop --topology");
  test::expect_tune_error(tune("plan --model llama-160m --load-format dummy --dry-run --hostfile " +
                               (dir / "none").string()),
                          "cannot read");
}

TEST(PipelinePlanCli, AHostfileMeasuresTheLinkOverMpi) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  test::TempDir dir;
  std::ofstream(dir / "hosts") << "localhost slots=2\n";
  // A fresh cache: the link is recorded in the calibration made there.
  const std::string cmd = "XDG_CACHE_HOME=" + dir.path().string() + " " +
                          (test::bin_dir() / "sandwich-tune").string() +
                          " plan --model llama-160m --load-format dummy --dry-run --trace lmsys "
                          "--trace-samples 4 --hostfile " +
                          (dir / "hosts").string();
  const CommandResult p = test::run_command(cmd);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("link: MPI ping-pong"), std::string::npos) << p.err;
  EXPECT_NE(p.out.find("pipeline   2 nodes over MPI ping-pong"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("P = 2 (1 pipeline of 2 nodes)"), std::string::npos) << p.out;
  const std::string cal = test::slurp(*std::filesystem::directory_iterator(dir / "sandwich"));
  EXPECT_NE(cal.find("\"link_gbs\""), std::string::npos) << cal;
}

}  // namespace
}  // namespace sandwich::tuner
