// Issue 33: files named by flags or plans come from anyone. /dev/zero, a FIFO or an oversized
// file as a chat template, a plan or a plan's schedule table stops sandwichd at once with one
// error line and little memory; and SIGTERM while it loads (here: waiting on a FIFO that never
// gets a writer) stops it within a second, its rank processes with it.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "http_test_client.h"
#include "plan_files.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

using Clock = std::chrono::steady_clock;

// sandwichd run through `sh -c "... exec sandwichd ARGS 2>LOG"`: its exit, its peak memory.
class DaemonRun {
 public:
  DaemonRun(const TempDir& dir, const std::string& before, const std::string& args)
      : log_(dir / "sandwichd.log") {
    const std::string cmd = before + "exec " + (bin_dir() / "sandwichd").string() + " --port 0 " +
                            stories_daemon_args() + " " + args + " 2>" + log_.string();
    start_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~DaemonRun() {
    if (code_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string log() const { return slurp(log_); }
  // The exit code (128 + signal if killed), or -1 if still running after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (code_ < 0 && Clock::now() < deadline) {
      int st = 0;
      rusage ru{};
      if (wait4(pid_, &st, WNOHANG, &ru) == pid_) {
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        max_rss_mib_ = ru.ru_maxrss / 1024;
        seconds_ = std::chrono::duration<double>(Clock::now() - start_).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return code_;
  }
  long max_rss_mib() const { return max_rss_mib_; }
  double seconds() const { return seconds_; }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int code_ = -1;
  long max_rss_mib_ = 0;
  double seconds_ = 0;
  Clock::time_point start_;
};

class SandwichdHostileFiles : public ::testing::Test {
 protected:
  void SetUp() override { SANDWICH_REQUIRE_DATA(); }
  // sandwichd must stop within a few seconds, exit 1, with `error` in its last line, never
  // serving, and without reading much (stories260K's daemon needs tens of MB).
  void expect_refused(const std::string& args, const std::string& error,
                      const std::string& before = "") {
    DaemonRun r(dir_, before, args);
    ASSERT_EQ(r.wait(std::chrono::seconds(20)), 1) << r.log();
    const std::string log = r.log();
    EXPECT_LT(r.seconds(), 5.0);
    EXPECT_LT(r.max_rss_mib(), 400) << log;
    EXPECT_EQ(log.find("listening on"), std::string::npos) << log;
    ASSERT_TRUE(log.ends_with("\n")) << log;
    const size_t from = log.rfind('\n', log.size() - 2);
    const std::string last = log.substr(from == std::string::npos ? 0 : from + 1);
    EXPECT_TRUE(last.starts_with("sandwichd: error: ")) << log;
    EXPECT_NE(last.find(error), std::string::npos) << log;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  TempDir dir_;
};

TEST_F(SandwichdHostileFiles, ADeviceOrAnEndlessPipeAsChatTemplateIsRefused) {
  expect_refused("--chat-template /dev/zero",
                 "chat template /dev/zero: a character device, not a file");
  // A pipe is read, but no more than the limit of a chat template: 20 MB of zeros are refused
  // after the first 1 MiB.
  ASSERT_EQ(::mkfifo(path("t.jinja").c_str(), 0600), 0);
  expect_refused(
      "--chat-template " + path("t.jinja"),
      "chat template " + path("t.jinja") + ": larger than 1 MiB (the limit for a chat template)",
      "head -c 20000000 /dev/zero >" + path("t.jinja") + " 2>/dev/null & ");
}

TEST_F(SandwichdHostileFiles, ADeviceAsPlanOrAsAPlansScheduleTableIsRefused) {
  expect_refused("--plan /dev/zero", "plan /dev/zero: a character device, not a file");
  engine::Plan p = stories_plan();
  p.schedules = "/dev/zero";
  engine::write_plan(p, dir_ / "plan.json");
  expect_refused("--plan " + path("plan.json"),
                 "schedule table /dev/zero: a character device, not a file");
}

TEST_F(SandwichdHostileFiles, ADeviceOrAFifoAsWeightsIsRefused) {
  expect_refused("--model /dev/zero", "model /dev/zero is not a regular file");
  ASSERT_EQ(::mkfifo(path("w.gguf").c_str(), 0600), 0);
  expect_refused("--model " + path("w.gguf"), "model " + path("w.gguf") + " is not a regular file");
}

bool ended(int pid) {
  const char s = proc_stat(pid).state;
  return s == 0 || s == 'Z';
}

// A chat template FIFO nobody writes holds the load after the rank processes have started: a
// real load that does not end. SIGTERM stops it at once, as a shell reports a signal.
TEST_F(SandwichdHostileFiles, SigtermWhileLoadingStopsItAndItsRanks) {
  ASSERT_EQ(::mkfifo(path("t.jinja").c_str(), 0600), 0);
  DaemonRun r(dir_, "",
              "--prefill-config 2x1 --decode-config 2x1 --chat-template " + path("t.jinja"));
  // The spawner and its two ranks, once the scheduler is made (the template is read after).
  int spawner = -1;
  std::vector<int> ranks;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (ranks.size() < 2 && Clock::now() < deadline && r.wait(std::chrono::milliseconds(10)) < 0) {
    const std::vector<int> s = children_named(r.pid(), "sandwich-spawn");
    if (s.size() == 1) {
      spawner = s[0];
      ranks = children_named(spawner, "sandwich-rank");
    }
  }
  ASSERT_EQ(ranks.size(), 2u) << r.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // on to the FIFO
  ASSERT_EQ(r.wait(std::chrono::milliseconds(0)), -1) << r.log();
  const auto sent = Clock::now();
  ASSERT_EQ(kill(r.pid(), SIGTERM), 0);
  EXPECT_EQ(r.wait(std::chrono::seconds(5)), 128 + SIGTERM) << r.log();
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(2));
  const std::string log = r.log();
  EXPECT_TRUE(log.ends_with("sandwichd: stopped by SIGTERM while loading the model\n")) << log;
  // The ranks and the spawner die with it (zombies until whoever adopted them reaps them); their
  // shared memory is anonymous (memfd), freed with the last of them.
  const auto gone_by = Clock::now() + std::chrono::seconds(2);
  for (int pid : {spawner, ranks[0], ranks[1]}) {
    while (!ended(pid) && Clock::now() < gone_by)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(ended(pid)) << pid;
  }
}

// Before the server's own handler exists: the plan is read first, here from a FIFO that never
// gets a writer.
TEST_F(SandwichdHostileFiles, SigintWhileReadingThePlanStopsIt) {
  ASSERT_EQ(::mkfifo(path("plan.json").c_str(), 0600), 0);
  DaemonRun r(dir_, "", "--plan " + path("plan.json"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(r.wait(std::chrono::milliseconds(0)), -1) << r.log();
  ASSERT_EQ(kill(r.pid(), SIGINT), 0);
  EXPECT_EQ(r.wait(std::chrono::seconds(3)), 128 + SIGINT) << r.log();
  EXPECT_TRUE(r.log().ends_with("sandwichd: stopped by SIGINT while reading the plan\n"))
      << r.log();
}

}  // namespace
}  // namespace sandwich::test
