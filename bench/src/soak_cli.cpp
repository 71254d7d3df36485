// `sandwich-bench soak`: command-line front of run_soak.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench/soak.h"
#include "common/cli.h"

namespace sandwich::bench {
namespace {

std::string mib(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}

void print_summary(const SoakReport& r, std::ostream& out) {
  out << "soak: " << r.seconds << " s\n";
  for (auto& [kind, outcomes] : r.outcomes) {
    out << "  " << std::left << std::setw(11) << kind;
    for (auto& [what, n] : outcomes) out << " " << what << "=" << n;
    out << "\n";
  }
  out << "  greedy mismatches: text " << r.greedy_text_mismatches << ", log-probs "
      << r.greedy_logprob_mismatches << "\n";
  out << "  server private RSS: launch " << mib(r.rss_launch) << ", start " << mib(r.rss_start)
      << ", peak " << mib(r.rss_peak) << ", end " << mib(r.rss_end) << " (VmRSS "
      << mib(r.vm_rss_start) << " -> " << mib(r.vm_rss_end) << ")\n";
  out << "  KV blocks in use at the end: " << r.kv_blocks_end << "\n";
  for (const RankKill& k : r.kills)
    out << "  rank kill: pid " << k.pid << " at " << k.at_s << " s, "
        << (k.recovery_s >= 0 ? "healthy after " + std::to_string(k.recovery_s) + " s"
                              : std::string("never healthy again"))
        << "\n";
  for (const std::string& s : r.samples) out << "  sample: " << s << "\n";
  for (const std::string& f : r.failures) out << "  FAILED: " << f << "\n";
  out << (r.failures.empty() ? "soak: passed\n" : "soak: failed\n");
}

}  // namespace

int bench_soak_main(int argc, char** argv, int first_arg) {
  SoakOptions o;
  std::string url = "http://127.0.0.1:8000", out_json;
  int pid = 0;
  int64_t seed = 1;
  double minutes = 0;
  bool any_order = false;
  ArgParser p("sandwich-bench soak",
              "Mixed hostile load against a local server, then checks that it came through whole "
              "(no stray 5xx, RSS back, KV empty, greedy answers equal to solo runs).");
  p.add("--url", &url, "server base URL (default http://127.0.0.1:8000)", "URL");
  p.add("--model", &o.model, "model id (default: the first of /v1/models)", "M");
  p.add("--api-key", &o.bearer, "API key to send as a bearer token", "KEY");
  p.add("--seconds", &o.seconds, "length of the mixed load (default 60)", "S");
  p.add("--minutes", &minutes, "length of the mixed load in minutes (overrides --seconds)", "MIN");
  p.add("--warmup-seconds", &o.warmup_seconds, "mixed load before memory is measured (default 30)",
        "S");
  p.add("--concurrency", &o.concurrency, "concurrent clients (default 8)", "N");
  p.add("--server-pid", &pid, "the server's pid: memory figures and rank kills need it", "PID");
  p.add("--kill-rank-every", &o.kill_rank_every,
        "seconds between SIGKILLs of one of the server's rank processes (default 0: none)", "S");
  p.add("--recovery-limit", &o.recovery_limit,
        "seconds a killed rank may take to heal (default 60)", "S");
  p.add("--greedy-prompts", &o.greedy_prompts, "greedy prompts compared with solo runs (default 6)",
        "N");
  p.add("--max-tokens", &o.max_tokens, "tokens per ordinary request at most (default 48)", "N");
  p.add_flag("--any-order", &any_order,
             "do not require greedy answers to equal their solo runs (servers without a "
             "batch-invariant mode)");
  p.add("--rss-tolerance", &o.rss_tolerance, "allowed RSS growth, a fraction (default 0.10)", "F");
  p.add("--seed", &seed, "random seed (default 1)", "N");
  p.add("--json", &out_json, "also write the report as JSON to this file", "FILE");
  if (!p.parse(argc, argv, first_arg)) return 0;
  o.url = Url::parse(url);
  if (minutes > 0) o.seconds = minutes * 60;
  if (!(o.seconds > 0) || o.warmup_seconds < 0) throw CliError("--seconds must be > 0");
  if (o.concurrency < 1 || o.concurrency > 1024) throw CliError("--concurrency must be 1..1024");
  if (o.greedy_prompts < 1 || o.greedy_prompts > 1000)
    throw CliError("--greedy-prompts must be 1..1000");
  if (o.max_tokens < 1) throw CliError("--max-tokens must be >= 1");
  if (o.kill_rank_every < 0) throw CliError("--kill-rank-every must be >= 0");
  if (o.kill_rank_every > 0 && pid <= 0) throw CliError("--kill-rank-every needs --server-pid");
  o.server_pid = pid;
  o.seed = static_cast<uint64_t>(seed);
  o.expect_invariant = !any_order;
  const SoakReport r = run_soak(o, std::cerr);
  print_summary(r, std::cout);
  if (!out_json.empty()) {
    std::ofstream f(out_json);
    f << r.json() << "\n";
    if (!f) throw CliError("cannot write " + out_json);
  }
  return r.failures.empty() ? 0 : 1;
}

}  // namespace sandwich::bench
