// `sandwich-bench serve`: command-line front of run_serve.
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "bench/report.h"
#include "bench/serve.h"
#include "common/cli.h"
#include "common/slo_preset.h"

namespace sandwich::bench {

namespace {

double parse_rate(const std::string& name, const std::string& v) {
  if (v == "inf" || v == "infinity") return std::numeric_limits<double>::infinity();
  const double r = ArgParser::parse_double(name, v);
  if (!(r > 0)) throw CliError(name + " must be > 0 (or inf), got '" + v + "'");
  if (r < kMinRequestRate)
    throw CliError(name + " " + v + " is below the smallest supported rate (0.001 requests/s)");
  return r;
}

// An integer option, range-checked as int64 before it is narrowed to int: 4294967297 must not
// become 1.
int parse_count(const std::string& name, const std::string& v, int64_t min, int64_t max) {
  const int64_t n = ArgParser::parse_int(name, v);
  if (n < min || n > max)
    throw CliError(name + " must be " + std::to_string(min) + ".." + std::to_string(max) +
                   ", got " + v);
  return static_cast<int>(n);
}

std::vector<double> parse_list(const std::string& name, const std::string& v, bool allow_inf) {
  std::vector<double> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw CliError(name + " has an empty item: '" + v + "'");
    const double x = allow_inf ? parse_rate(name, item) : ArgParser::parse_double(name, item);
    if (!(x > 0)) throw CliError(name + " items must be > 0, got '" + item + "'");
    out.push_back(x);
  }
  if (out.empty()) throw CliError(name + " needs a comma-separated list");
  return out;
}

// The command line as given; serve_options makes the ServeOptions of it.
struct ServeArgs {
  ServeOptions o;
  std::vector<std::string> endpoints;
  std::string api = "completions", dataset = "sharegpt", slo_definition = "per-request";
  std::optional<std::string> slo_preset, rate, rates, scales;
  std::optional<int> num_prompts, max_model_len;
  std::optional<double> ttft, tpot, target;
  bool no_plots = false;
  int seed = 0;
};

// What to send where, and when: the endpoints, the dataset, the request rates or the goodput
// search.
void add_traffic_options(ArgParser& p, ServeArgs& a) {
  ServeOptions& o = a.o;
  p.add("--endpoint", &a.endpoints,
        "server to benchmark, [LABEL=]http://host:port (default http://127.0.0.1:8000)", "URL");
  p.add("--model", &o.model,
        "model id sent to every server (default: each server's first /v1/models id)", "NAME");
  p.add("--api", &a.api, "completions (default) or chat", "API");
  p.add("--dataset", &a.dataset,
        "sharegpt (default), lmsys, fixed:IN,OUT or csv:PATH (columns input_tokens,output_tokens)",
        "D");
  p.add("--dataset-path", &o.dataset_path,
        "ShareGPT lengths CSV (default $SANDWICH_SHARED/data/traces/sharegpt_lengths.csv)", "P");
  p.option("--num-prompts", "N", "requests per run (default 1000; 90 with --single-sequence)",
           [&a](const std::string& v) {
             a.num_prompts = parse_count("--num-prompts", v, 1, kMaxPrompts);
           });
  p.add("--request-rate", &a.rate, "mean requests per second, or inf: all at once (default inf)",
        "R");
  p.add("--request-rates", &a.rates,
        "sweep: comma-separated rates, e.g. 0.25,0.5,1,2,inf; goodput = the highest rate meeting "
        "the SLO (with every lower one)",
        "LIST");
  p.add_flag("--goodput-search", &o.goodput_search.enabled,
             "find goodput by bisection over the request rate (instead of --request-rate(s)): "
             "each probe is a run of --num-prompts requests");
  p.option("--search-min-rate", "R", "lower bound of the goodput search, req/s (default 0.25)",
           [&o](const std::string& v) {
             o.goodput_search.min_rate = parse_rate("--search-min-rate", v);
           });
  p.option("--search-max-rate", "R", "upper bound of the goodput search, req/s (default 16)",
           [&o](const std::string& v) {
             o.goodput_search.max_rate = parse_rate("--search-max-rate", v);
           });
  p.option("--search-resolution", "R",
           "the goodput search stops when the bracket is at most R req/s wide (default 0.25)",
           [&o](const std::string& v) {
             o.goodput_search.resolution = ArgParser::parse_double("--search-resolution", v);
           });
  p.add("--burstiness", &o.burstiness,
        "gamma shape of the arrival gaps: 1 = Poisson, < 1 burstier (default 1)", "B");
  p.option("--max-concurrency", "C", "requests in flight at most (default: no limit)",
           [&o](const std::string& v) {
             o.max_concurrency = parse_count("--max-concurrency", v, 0, kMaxConcurrency);
           });
  p.add_flag("--single-sequence", &o.single_sequence,
             "one request after another (concurrency 1, no arrival process)");
  p.option("--seed", "S", "seed of sampling, arrivals and prompt salts (default 0)",
           [&a](const std::string& v) { a.seed = parse_count("--seed", v, 0, INT32_MAX); });
}

void add_slo_options(ArgParser& p, ServeArgs& a) {
  p.add("--slo", &a.slo_preset,
        "SLO preset name in configs/slo (single-1.3b, single-8b, batched-160m, batched-1.3b) or a "
        "file",
        "NAME");
  p.option("--slo-ttft-ms", "T", "TTFT target in ms (overrides the preset)",
           [&a](const std::string& v) { a.ttft = ArgParser::parse_double("--slo-ttft-ms", v); });
  p.option("--slo-tpot-ms", "P", "TPOT target in ms (overrides the preset)",
           [&a](const std::string& v) { a.tpot = ArgParser::parse_double("--slo-tpot-ms", v); });
  p.add("--slo-scale", &a.o.slo_scale, "multiply both targets by X for this machine (default 1)",
        "X");
  p.add("--slo-scales", &a.scales,
        "attainment curve: comma-separated scales (default 0.5,0.75,1,1.25,1.5,1.75,2,2.5,3)",
        "LIST");
  p.option(
      "--attainment-target", "F",
      "attainment that counts as meeting the SLO, for goodput (default 0.9, or the "
      "preset's); it also sets the percentile of --slo-definition percentile (0.9: P90)",
      [&a](const std::string& v) { a.target = ArgParser::parse_double("--attainment-target", v); });
  p.add("--slo-definition", &a.slo_definition,
        "what meeting the SLO means for goodput: per-request (attainment >= the target; default) "
        "or percentile (the paper's: P90 TTFT and P90 TPOT within the targets, for a target of "
        "0.9)",
        "D");
}

// The requests themselves, the client, and where the results go.
void add_request_options(ArgParser& p, ServeArgs& a) {
  ServeOptions& o = a.o;
  p.option(
      "--max-model-len", "L",
      "filter the dataset to input + output <= L (default: the smallest server context, else 2048)",
      [&a](const std::string& v) {
        a.max_model_len = parse_count("--max-model-len", v, 2, kMaxModelLen);
      });
  p.add("--request-timeout", &o.timeout_s,
        "seconds a request may take, from sending to its last byte (default 600)", "S");
  p.option("--warmup", "N", "unrecorded requests per endpoint before its runs (default 0)",
           [&o](const std::string& v) { o.warmup = parse_count("--warmup", v, 0, kMaxPrompts); });
  p.option("--shared-prefix-tokens", "N",
           "every prompt starts with the same N-token prefix (a system prompt) before its own "
           "(default 0)",
           [&o](const std::string& v) {
             o.shared_prefix_tokens = parse_count("--shared-prefix-tokens", v, 0, kMaxModelLen);
           });
  p.add("--extra-body", &o.extra_body, "JSON object merged into every request body", "JSON");
  p.add("--api-key", &o.api_key, "sent as 'Authorization: Bearer KEY'", "KEY");
  p.option("--client-threads", "N", "client I/O threads (default 1)", [&o](const std::string& v) {
    o.client_threads = parse_count("--client-threads", v, 1, kMaxClientThreads);
  });
  p.add("--output-dir", &o.output_dir,
        "write per-request and summary JSON, report.md and plots/*.png here", "DIR");
  p.add_flag("--no-plots", &a.no_plots, "do not draw PNGs");
}

// The endpoints, API, dataset and SLO preset the words name; then the options that override
// the preset.
void resolve_names(ServeArgs& a) {
  ServeOptions& o = a.o;
  try {
    if (a.endpoints.empty()) a.endpoints.push_back("http://127.0.0.1:8000");
    for (const auto& e : a.endpoints) o.endpoints.push_back(parse_endpoint(e));
    o.api = parse_api(a.api);
    o.dataset = parse_dataset_spec(a.dataset);
    o.slo_definition = parse_slo_definition(a.slo_definition);
    if (a.slo_preset) {
      const SloPreset preset = read_slo_preset(*a.slo_preset);
      o.slo = {preset.ttft_ms, preset.tpot_ms};
      o.slo_name = preset.name;
      if (preset.attainment_target) o.attainment_target = *preset.attainment_target;
      if (preset.num_prompts && o.single_sequence && !a.num_prompts)
        a.num_prompts = preset.num_prompts;
    }
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  if (a.ttft) o.slo.ttft_ms = *a.ttft;
  if (a.tpot) o.slo.tpot_ms = *a.tpot;
  if (a.target) o.attainment_target = *a.target;
}

// The options as run_serve takes them; the checks that span several options first.
ServeOptions serve_options(ServeArgs& a) {
  resolve_names(a);
  ServeOptions& o = a.o;
  // No SLO at all: latencies and throughput only. Half of one is a mistake.
  if ((a.ttft || a.tpot) && !o.slo.given())
    throw CliError("give the SLO: --slo-ttft-ms T and --slo-tpot-ms P (both > 0), or --slo PRESET");
  if (o.goodput_search.enabled && !o.slo.given())
    throw CliError(
        "--goodput-search needs an SLO: --slo-ttft-ms T and --slo-tpot-ms P, or --slo PRESET");
  if (a.rate && a.rates) throw CliError("give --request-rate or --request-rates, not both");
  if (o.single_sequence && (a.rate || a.rates || o.max_concurrency))
    throw CliError(
        "--single-sequence sends one request at a time; drop --request-rate(s) and "
        "--max-concurrency");
  if (o.goodput_search.enabled && (a.rate || a.rates || o.single_sequence))
    throw CliError(
        "--goodput-search picks the request rates itself; drop --request-rate(s) and "
        "--single-sequence");
  if (a.rate) o.rates = {parse_rate("--request-rate", *a.rate)};
  if (a.rates) o.rates = parse_list("--request-rates", *a.rates, true);
  if (a.scales) o.slo_scales = parse_list("--slo-scales", *a.scales, false);
  o.seed = static_cast<uint64_t>(a.seed);
  o.num_prompts = a.num_prompts.value_or(o.single_sequence ? 90 : 1000);
  o.max_model_len = a.max_model_len;
  o.plots = !a.no_plots;
  return o;
}

void print_report(const ServeReport& report) {
  std::cout << "\n" << markdown_report(report);
  if (!report.files.empty()) {
    std::cout << "\nwrote:\n";
    for (const auto& f : report.files) std::cout << "  " << f << "\n";
  }
}

// A benchmark in which no request of any endpoint succeeded measured nothing (a wrong URL, a
// server that is down): scripts must see that in the exit status, after the report is out.
void fail_if_every_request_failed(const ServeReport& report) {
  size_t total = 0, failed = 0;
  const RequestRecord* first_failure = nullptr;
  for (const auto& run : report.runs)
    for (const auto& r : run.records) {
      ++total;
      if (r.ok) continue;
      ++failed;
      if (!first_failure) first_failure = &r;
    }
  if (total > 0 && failed == total) {
    std::cout << std::flush;
    const std::string why = first_failure->error_message.empty() ? first_failure->error_kind
                                                                 : first_failure->error_message;
    throw CliError("every request failed (" + std::to_string(failed) + " of " +
                   std::to_string(total) + " on " + std::to_string(report.endpoints.size()) +
                   " endpoint" + (report.endpoints.size() == 1 ? "" : "s") +
                   "); the first: " + why);
  }
}

}  // namespace

int bench_serve_main(int argc, char** argv, int first_arg) {
  ServeArgs args;
  ArgParser p(
      "sandwich-bench serve",
      "Streams a trace of requests to OpenAI-compatible servers (sandwichd, llama-server, vLLM) "
      "and reports TTFT, TPOT, ITL, E2E, throughput and, given an SLO, SLO attainment and goodput "
      "(the highest request rate meeting the SLO, from a sweep or --goodput-search), comparing the "
      "endpoints.");
  add_traffic_options(p, args);
  add_slo_options(p, args);
  add_request_options(p, args);
  if (!p.parse(argc, argv, first_arg)) return 0;
  const ServeOptions o = serve_options(args);
  ServeReport report;
  try {
    report = run_serve(o, std::cout);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  print_report(report);
  fail_if_every_request_failed(report);
  return 0;
}

}  // namespace sandwich::bench
