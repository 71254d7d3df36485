// sandwichd split over nodes (issue 29), run for real on this machine: mpirun with the TCP
// transport only, so every hop between nodes crosses the network stack. Greedy completions of a
// pipeline match one process bit for bit; bad configurations are one-line errors before serving;
// a node that dies or hangs ends the job with a line naming it and leaves no process behind; each
// node holds ~1/P of the weights.
#include <signal.h>

#include <chrono>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "command.h"
#include "http_test_client.h"
#include "mpirun.h"
#include "test_data.h"

namespace sandwich::test {
namespace {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kPrompts = {"Once upon a time", "The little dog was sad because",
                                           "Lily and Ben went to the park. They saw"};

// A story of more than 200 tokens of tok512.bin (so a prefill of it is cut into micro-batches).
std::string long_prompt() {
  std::string s;
  for (int i = 0; i < 6; ++i)
    s += "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
         "sun with her dog, Max. One day, they found a big red ball in the park. ";
  return s;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A greedy completion with the top 5 logprobs of every token: the whole answer.
json greedy(uint16_t port, const std::string& prompt, int max_tokens = 40) {
  Client c(port);
  const HttpResult r =
      c.post("/v1/completions",
             {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"logprobs", 5}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.j() : json();
}

// The same prompts sent at once, so that the server batches them (decode batches > 1).
std::vector<json> greedy_concurrently(uint16_t port, const std::vector<std::string>& prompts,
                                      int max_tokens = 40) {
  std::vector<std::future<json>> f;
  for (const std::string& p : prompts)
    f.push_back(std::async(std::launch::async, [=] { return greedy(port, p, max_tokens); }));
  std::vector<json> out;
  for (auto& x : f) out.push_back(x.get());
  return out;
}

// Same tokens, same logprobs: compared as the JSON text of the choices, so every number is
// compared exactly (its shortest round-trip form).
void expect_same_choices(const json& want, const json& got, const std::string& what) {
  ASSERT_TRUE(want.contains("choices") && got.contains("choices")) << what;
  EXPECT_GT(want["usage"]["completion_tokens"].get<int>(), 0) << what;
  EXPECT_EQ(want["choices"].dump(), got["choices"].dump()) << what;
}

std::vector<json> greedy_all(uint16_t port, const std::vector<std::string>& prompts) {
  std::vector<json> out;
  for (const std::string& p : prompts) out.push_back(greedy(port, p));
  return out;
}

void expect_same_all(const std::vector<json>& want, const std::vector<json>& got,
                     const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    expect_same_choices(want[i], got[i], what + ", prompt " + std::to_string(i));
}

// One rank of one thread in every node unless `extra` says otherwise: the kernels' schedules
// depend on the thread count (a node bound to one core would otherwise run other schedules than
// one process on the whole machine), and bit-for-bit comparisons need the same ones.
const std::string kOneThread = "--prefill-config 1x1 --decode-config 1x1";

// sandwichd serving stories260K on `nodes` nodes (plain, without mpirun, for one).
std::unique_ptr<Daemon> stories(int nodes, const std::string& extra = kOneThread,
                                const std::string& mpirun_extra = "") {
  if (nodes == 1) return std::make_unique<Daemon>(stories_daemon_args() + " " + extra);
  return std::make_unique<Daemon>(
      stories_daemon_args() + " --pipeline-parallel " + std::to_string(nodes) + " " + extra,
      mpirun_prefix(nodes) + " " + mpirun_extra);
}

class PipelineSandwichd : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDWICH_REQUIRE_MPIRUN();
    SANDWICH_REQUIRE_DATA();
  }
};

// Prompts under 128 tokens are one prefill micro-batch, and a decode batch of one is one too,
// so the default kernels see the same GEMM shapes as in one process.
TEST_F(PipelineSandwichd, TwoAndThreeNodesGiveTheSingleProcessTokensAndLogprobs) {
  std::vector<json> want;
  {
    auto one = stories(1);
    ASSERT_NE(one->port(), 0);
    want = greedy_all(one->port(), kPrompts);
  }
  const std::vector<std::pair<int, std::string>> runs = {
      {2, ""}, {3, ""}, {3, "--layer-split 1,3,1"}};
  for (const auto& [nodes, split] : runs) {
    auto d = stories(nodes, kOneThread + " " + split);
    ASSERT_NE(d->port(), 0);
    EXPECT_NE(d->log().find("pipeline node " + std::to_string(nodes - 1) + " ("), std::string::npos)
        << d->log();
    expect_same_all(want, greedy_all(d->port(), kPrompts),
                    "P = " + std::to_string(nodes) + " " + split);
  }
}

// Two tensor-parallel ranks inside each node: against one process with the same two ranks (an
// all-reduce of two partial sums rounds otherwise than one sum). Unbound (--bind-to none), each
// node sees the machine's CPUs: bound, mpirun gives a node of two processes one core each.
TEST_F(PipelineSandwichd, TensorParallelRanksInsideEachNodeGiveTheSingleProcessResult) {
  const std::string tp = "--prefill-config 2x1 --decode-config 2x1";
  std::vector<json> want;
  {
    auto one = stories(1, tp);
    ASSERT_NE(one->port(), 0);
    want = greedy_all(one->port(), kPrompts);
  }
  auto d = stories(2, tp, "--bind-to none");
  ASSERT_NE(d->port(), 0);
  EXPECT_NE(d->log().find("prefill 2x1"), std::string::npos) << d->log();
  expect_same_all(want, greedy_all(d->port(), kPrompts), "P = 2 with 2x1 in each node");
}

// A prompt over 128 tokens is cut into prefill micro-batches of >= 64 tokens, and the default
// kernels are not promised to be batch-invariant across the GEMM's M (schedules are chosen by
// M): so it is compared either with one micro-batch, or with batch-invariant kernels on both
// sides. Requests sent at once are decoded
// as one batch, which the pipeline cuts by sequences: batch-invariant kernels on both sides too.
TEST_F(PipelineSandwichd, LongPromptsAndConcurrentRequestsAreExact) {
  const std::string lp = long_prompt();
  std::vector<std::string> at_once = kPrompts;
  at_once.push_back(lp);
  json want_long, want_long_bi;
  std::vector<json> want_at_once;
  {
    auto one = stories(1);
    ASSERT_NE(one->port(), 0);
    want_long = greedy(one->port(), lp);
    ASSERT_GE(want_long["usage"]["prompt_tokens"].get<int>(), 200);
  }
  {
    auto one = stories(1, kOneThread + " --batch-invariant");
    ASSERT_NE(one->port(), 0);
    want_long_bi = greedy(one->port(), lp);
    want_at_once = greedy_concurrently(one->port(), at_once);
  }
  {
    auto d = stories(2, kOneThread + " --micro-batches 1");
    ASSERT_NE(d->port(), 0);
    expect_same_choices(want_long, greedy(d->port(), lp), "long prompt, P = 2, one micro-batch");
  }
  auto d = stories(2, kOneThread + " --batch-invariant");
  ASSERT_NE(d->port(), 0);
  expect_same_choices(want_long_bi, greedy(d->port(), lp), "long prompt, P = 2, batch-invariant");
  expect_same_all(want_at_once, greedy_concurrently(d->port(), at_once),
                  "concurrent requests, P = 2, batch-invariant");
}

// The lines the processes of a failed job wrote that are not mpirun's own (its boxes of text
// between rules of dashes).
std::vector<std::string> program_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  bool box = false;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("-----", 0) == 0) {
      box = !box;
      continue;
    }
    if (!box && !l.empty()) out.push_back(l);
  }
  return out;
}

// Every node that refuses says the same one line (naming the problem), and nothing is served.
void expect_refused(const std::string& launcher, const std::string& args,
                    const std::string& fragment) {
  const auto t0 = Clock::now();
  const CommandResult r = run_command(launcher + " " + (bin_dir() / "sandwichd").string() +
                                      " --port 0 " + stories_daemon_args() + " " + args);
  SCOPED_TRACE(launcher + " sandwichd " + args);
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_LT(r.code, 128) << "crashed: " << r.err;
  EXPECT_EQ(r.err.find("ready"), std::string::npos) << r.err;
  // Beside the error and the log, only the nodes mpirun ended when the first one failed.
  std::vector<std::string> errors;
  for (const std::string& l : program_lines(r.err)) {
    if (l.rfind("sandwichd: error: ", 0) == 0)
      errors.push_back(l);
    else
      EXPECT_TRUE(l.find(" INFO ") != std::string::npos ||
                  l.find(" WARNING ") != std::string::npos ||
                  l.rfind("sandwichd: stopped by SIGTERM", 0) == 0)
          << l << "\n"
          << r.err;
  }
  ASSERT_FALSE(errors.empty()) << r.err;
  for (const std::string& l : errors) EXPECT_EQ(l, errors[0]) << r.err;
  EXPECT_NE(errors[0].find(fragment), std::string::npos) << r.err;
  std::printf("refused in %.1f s: %s\n", seconds_since(t0), errors[0].c_str());
}

TEST_F(PipelineSandwichd, NodeCountsThatDoNotMatchAreOneLineErrors) {
  // Without mpirun there is one process: the single-process check of the tools.
  expect_one_line_error(run_command((bin_dir() / "sandwichd").string() + " --port 0 " +
                                    stories_daemon_args() + " --pipeline-parallel 2"),
                        "mpirun -np 2");
  expect_refused(mpirun_prefix(2), "", "mpirun started 2 processes but --pipeline-parallel is 1");
  // stories260K has 5 layers.
  expect_refused(mpirun_prefix(6), "-pp 6", "more nodes than the model has layers (5)");
}

TEST_F(PipelineSandwichd, LayerSplitsAndConfigurationsThatDoNotFitAreOneLineErrors) {
  expect_refused(mpirun_prefix(2), "-pp 2 --layer-split 2,2", "sums to 4 layers");
  expect_refused(mpirun_prefix(2), "-pp 2 --layer-split 5", "gives 1 nodes, but there are 2");
  expect_refused(mpirun_prefix(3), "-pp 3 --layer-split 2,3,0", "at least one layer");
  // mpirun binds each of two nodes to a core of its own.
  expect_refused(mpirun_prefix(2), "-pp 2 --decode-config 3x1", "3 ranks is more than");
}

// Lines of the log after start-up that name `node`.
std::vector<std::string> lines_naming(const std::string& log, const std::string& node) {
  std::vector<std::string> out;
  std::istringstream in(log);
  bool ready = false;
  for (std::string l; std::getline(in, l);) {
    if (l.find("sandwichd: ready") != std::string::npos) ready = true;
    if (ready && l.find(node) != std::string::npos) out.push_back(l);
  }
  return out;
}

// Every process of the job has gone within `seconds` (true), else false after killing them.
bool all_gone(const std::vector<int>& pids, double seconds) {
  const auto t0 = Clock::now();
  for (;;) {
    bool alive = false;
    for (int p : pids) alive = alive || process_alive(p);
    if (!alive) return true;
    if (seconds_since(t0) > seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int p : pids) kill(p, SIGKILL);
  return false;
}

// kill -9 of the worker in the middle of a long streamed generation (llama-160m with dummy
// weights: tens of milliseconds a token here, so it is still generating).
TEST_F(PipelineSandwichd, AWorkerKilledMidGenerationEndsTheJobNamingIt) {
  Daemon d("--model llama-160m --load-format dummy --pipeline-parallel 2", mpirun_prefix(2));
  ASSERT_NE(d.port(), 0);
  const int head = mpi_rank_pid(d.pid(), 0, "sandwichd");
  const int worker = mpi_rank_pid(d.pid(), 1, "sandwichd");
  ASSERT_GT(head, 0);
  ASSERT_GT(worker, 0);
  const int max_tokens = 300;
  auto events = std::async(std::launch::async, [&] {
    Client c(d.port());
    int status = 0;
    return c.stream("/v1/completions",
                    {{"prompt", "Once upon a time"},
                     {"max_tokens", max_tokens},
                     {"ignore_eos", true},
                     {"temperature", 0},
                     {"stream", true}},
                    &status);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  const auto t0 = Clock::now();
  const int code = d.wait_exit(20);
  const double exit_s = seconds_since(t0);
  EXPECT_NE(code, -1) << "mpirun did not end: " << d.log();
  EXPECT_NE(code, 0) << d.log();
  EXPECT_LT(exit_s, 10) << d.log();
  ASSERT_EQ(events.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the client's request hangs";
  const std::vector<std::string> got = events.get();
  EXPECT_LT(got.size(), static_cast<size_t>(max_tokens)) << "it was killed after the generation";
  EXPECT_TRUE(got.empty() || got.back() != "[DONE]") << "a finished stream: " << got.back();
  const auto named = lines_naming(d.log(), "node 1 (");
  EXPECT_EQ(named.size(), 1u) << d.log();
  // Killed mid-generation: a decode step after the first.
  static const std::regex mid(R"(node 1 \([^)]*\) had not finished decode step ([0-9]+))");
  std::smatch m;
  EXPECT_TRUE(!named.empty() && std::regex_search(named[0], m, mid) && std::stoi(m[1]) > 2)
      << d.log();
  EXPECT_TRUE(all_gone({head, worker}, 5)) << "processes left behind";
  std::printf("mpirun exited %d, %.1f s after the kill, %zu events streamed; the head: %s\n", code,
              exit_s, got.size(), named.empty() ? "(nothing)" : named[0].c_str());
}

// A worker that hangs (SIGSTOP): the step times out, the request fails with 503, the head
// names the node and mpirun ends every process (the stopped one too).
TEST_F(PipelineSandwichd, AHungWorkerTimesOutTheStepAndEndsTheJob) {
  auto d = stories(2, kOneThread + " --pipeline-timeout 3");
  ASSERT_NE(d->port(), 0);
  const int head = mpi_rank_pid(d->pid(), 0, "sandwichd");
  const int worker = mpi_rank_pid(d->pid(), 1, "sandwichd");
  ASSERT_GT(head, 0);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGSTOP), 0);
  const auto t0 = Clock::now();
  Client c(d->port());
  const HttpResult r = c.post(
      "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}});
  const double answer_s = seconds_since(t0);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_LT(r.status, 600) << r.body;
  EXPECT_GE(answer_s, 2.9);
  EXPECT_LT(answer_s, 8);
  const int code = d->wait_exit(15);
  const double exit_s = seconds_since(t0);
  EXPECT_NE(code, -1) << "mpirun did not end: " << d->log();
  EXPECT_NE(code, 0) << d->log();
  static const std::regex timed_out(R"(node 1 \([^)]*\) did not finish \w+ step \d+ within 3 s)");
  EXPECT_TRUE(std::regex_search(d->log(), timed_out)) << d->log();
  const bool gone = all_gone({head, worker}, 5);
  if (!gone) kill(worker, SIGCONT);
  EXPECT_TRUE(gone) << "processes left behind";
  std::printf("HTTP %d after %.1f s (%s); mpirun exited %d after %.1f s\n", r.status, answer_s,
              r.body.c_str(), code, exit_s);
}

// "pipeline node N (...): layers a-b of L + ..., X MiB of weights, ..." per node.
std::vector<double> node_weight_mib(const std::string& log) {
  static const std::regex line(
      R"(pipeline node \d+ \([^)]*\): layers [^,]*, ([0-9.]+) MiB of weights)");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

// The single process's "ready: ..., X GiB loaded" in MiB.
double loaded_mib(const std::string& log) {
  static const std::regex ready(R"(ready: .*; ([0-9.]+) GiB loaded)");
  std::smatch m;
  if (!std::regex_search(log, m, ready)) return 0;
  return std::stod(m[1]) * 1024;
}

std::string rss_of(int pid) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("VmRSS:", 0) == 0) return l.substr(6 + l.substr(6).find_first_not_of(" \t"));
  return "?";
}

// Each node loads only its layers: ~1/P of one process's weights, up to `over` times that. The
// first node also holds the embedding, which the split (by compute) counts as nothing: a sixth
// of llama-160m, so its first node of three holds 0.45 of the weights.
void expect_weights_split(const std::string& model, const std::vector<int>& node_counts,
                          double over) {
  double single = 0;
  {
    Daemon one("--model " + model + " --load-format dummy " + kOneThread);
    ASSERT_NE(one.port(), 0);
    single = loaded_mib(one.log());
    std::printf("%s, one process: %.0f MiB of weights (resident %s)\n", model.c_str(), single,
                rss_of(one.pid()).c_str());
  }
  ASSERT_GT(single, 0);
  for (int nodes : node_counts) {
    Daemon d("--model " + model + " --load-format dummy " + kOneThread + " --pipeline-parallel " +
                 std::to_string(nodes),
             mpirun_prefix(nodes));
    ASSERT_NE(d.port(), 0);
    const std::vector<double> mib = node_weight_mib(d.log());
    ASSERT_EQ(mib.size(), static_cast<size_t>(nodes)) << d.log();
    double sum = 0;
    for (int n = 0; n < nodes; ++n) {
      sum += mib[n];
      EXPECT_LT(mib[n], over * single / nodes) << "node " << n << ": " << d.log();
      std::printf("%s, node %d of %d: %.1f MiB of weights (%.2f of one process's; resident %s)\n",
                  model.c_str(), n, nodes, mib[n], mib[n] / single,
                  rss_of(mpi_rank_pid(d.pid(), n, "sandwichd")).c_str());
    }
    // The GiB of the single process's line has two decimals.
    EXPECT_NEAR(sum, single, 0.01 * 1024) << d.log();
  }
}

TEST_F(PipelineSandwichd, EachNodeHoldsItsShareOfTheWeights) {
  expect_weights_split("llama-160m", {2, 3}, 1.4);
}

// A dummy llama-1.3b: about 25 s to make its weights in one process here and 18 s over two
// nodes, so this suite carries the ctest label "slow" (scripts/test.sh leaves it out unless
// SANDWICH_SLOW=1).
class PipelineSandwichdSlow : public PipelineSandwichd {};

TEST_F(PipelineSandwichdSlow, DummyLlama13bOnTwoNodesGivesTheSingleProcessResult) {
  const std::string args = "--model llama-1.3b --load-format dummy " + kOneThread;
  const std::vector<std::string> prompts = {"Once upon a time", "a b c"};
  std::vector<json> want;
  double single = 0;
  {
    Daemon one(args);
    ASSERT_NE(one.port(), 0);
    single = loaded_mib(one.log());
    for (const std::string& p : prompts) want.push_back(greedy(one.port(), p, 4));
  }
  Daemon d(args + " --pipeline-parallel 2", mpirun_prefix(2));
  ASSERT_NE(d.port(), 0);
  std::vector<json> got;
  for (const std::string& p : prompts) got.push_back(greedy(d.port(), p, 4));
  expect_same_all(want, got, "llama-1.3b, P = 2");
  const std::vector<double> mib = node_weight_mib(d.log());
  ASSERT_EQ(mib.size(), 2u) << d.log();
  for (int n = 0; n < 2; ++n) {
    EXPECT_LT(mib[n], 1.3 * single / 2) << d.log();
    std::printf("llama-1.3b, node %d of 2: %.1f MiB of weights, one process %.0f MiB\n", n, mib[n],
                single);
  }
}

}  // namespace
}  // namespace sandwich::test
