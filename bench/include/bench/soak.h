#pragma once
// `sandwich-bench soak`: minutes of mixed, partly hostile load against one local server —
// streams, clients that hang up or never read, malformed requests, killed ranks — and then the
// checks that the server came through whole: no 5xx but the rank kills', memory back where it
// started, an empty KV cache, and greedy answers equal to their solo runs.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "bench/http_client.h"

namespace sandwich::bench {

struct SoakOptions {
  Url url;
  std::string model;   // "" asks /v1/models
  std::string bearer;  // API key, if the server wants one
  double seconds = 60;
  double warmup_seconds =
      30;  // mixed load before memory is measured (allocator pools grow); no kills
  int concurrency = 8;
  pid_t server_pid = 0;        // needed for memory figures and rank kills
  double kill_rank_every = 0;  // seconds between SIGKILLs of a rank; 0: none
  double recovery_limit = 60;  // seconds a kill may take to heal before it counts as a failure
  int greedy_prompts = 6;
  int max_tokens = 48;
  bool expect_invariant = true;  // greedy answers must equal their solo runs
  double rss_tolerance = 0.10;
  double request_timeout = 120;
  uint64_t seed = 1;
};

struct RankKill {
  pid_t pid = 0;
  std::string name;
  double at_s = 0;         // since the run started
  double recovery_s = -1;  // until /health said 200 again; -1: it never did
};

struct SoakReport {
  // outcomes[kind][outcome] = count; kinds: stream, greedy, hang_up, never_read, malformed;
  // outcomes: ok, 4xx, 429, 5xx_rank_kill, 5xx, transport_error, ...
  std::map<std::string, std::map<std::string, uint64_t>> outcomes;
  std::vector<std::string> samples;  // first few unexpected answers, for the log
  std::vector<RankKill> kills;
  uint64_t greedy_text_mismatches = 0, greedy_logprob_mismatches = 0;
  // Bytes of the server process: private resident memory (RssAnon), and VmRSS beside it.
  uint64_t rss_launch = 0, rss_start = 0, rss_peak = 0, rss_end = 0;
  uint64_t vm_rss_start = 0, vm_rss_end = 0;
  double kv_blocks_end = -1;
  double seconds = 0;
  std::vector<std::string> failures;  // empty: the server passed
  std::string json() const;
};

// Throws std::runtime_error when the server cannot be reached or does not become healthy.
SoakReport run_soak(const SoakOptions& options, std::ostream& log);

int bench_soak_main(int argc, char** argv, int first_arg);

}  // namespace sandwich::bench
