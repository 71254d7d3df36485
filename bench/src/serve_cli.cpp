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

}  // namespace

int bench_serve_main(int argc, char** argv, int first_arg) {
  ServeOptions o;
  std::vector<std::string> endpoints;
  std::string api = "completions", dataset = "sharegpt", slo_definition = "per-request";
  std::optional<std::string> slo_preset, rate, rates, scales;
  std::optional<int> num_prompts, max_model_len;
  std::optional<double> ttft, tpot, target;
  bool no_plots = false;
  int seed = 0;
  ArgParser p(
      "sandwich-bench serve",
      "Streams a trace of requests to OpenAI-compatible servers (sandwichd, llama-server, vLLM) "
      "and reports TTFT, TPOT, ITL, E2E, throughput, SLO attainment and goodput (the highest "
      "request rate meeting the SLO, from a sweep or --goodput-search), comparing the "
      "endpoints.");
  p.add("--endpoint", &endpoints,
        "server to benchmark, [LABEL=]http://host:port (default http://127.0.0.1:8000)", "URL");
  p.add("--model", &o.model,
        "model id sent to every server (default: each server's first /v1/models id)", "NAME");
  p.add("--api", &api, "completions (default) or chat", "API");
  p.add("--dataset", &dataset,
        "sharegpt (default), lmsys, fixed:IN,OUT or csv:PATH (columns input_tokens,output_tokens)",
        "D");
  p.add("--dataset-path", &o.dataset_path,
        "ShareGPT lengths CSV (default $SANDWICH_SHARED/data/traces/sharegpt_lengths.csv)", "P");
  p.option(
      "--num-prompts", "N", "requests per run (default 1000; 90 with --single-sequence)",
      [&](const std::string& v) { num_prompts = parse_count("--num-prompts", v, 1, kMaxPrompts); });
  p.add("--request-rate", &rate, "mean requests per second, or inf: all at once (default inf)",
        "R");
  p.add("--request-rates", &rates,
        "sweep: comma-separated rates, e.g. 0.25,0.5,1,2,inf; goodput = the highest rate meeting "
        "the SLO (with every lower one)",
        "LIST");
  p.add_flag("--goodput-search", &o.goodput_search.enabled,
             "find goodput by bisection over the request rate (instead of --request-rate(s)): "
             "each probe is a run of --num-prompts requests");
  p.option("--search-min-rate", "R", "lower bound of the goodput search, req/s (default 0.25)",
           [&](const std::string& v) {
             o.goodput_search.min_rate = parse_rate("--search-min-rate", v);
           });
  p.option("--search-max-rate", "R", "upper bound of the goodput search, req/s (default 16)",
           [&](const std::string& v) {
             o.goodput_search.max_rate = parse_rate("--search-max-rate", v);
           });
  p.option("--search-resolution", "R",
           "the goodput search stops when the bracket is at most R req/s wide (default 0.25)",
           [&](const std::string& v) {
             o.goodput_search.resolution = ArgParser::parse_double("--search-resolution", v);
           });
  p.add("--burstiness", &o.burstiness,
        "gamma shape of the arrival gaps: 1 = Poisson, < 1 burstier (default 1)", "B");
  p.option("--max-concurrency", "C", "requests in flight at most (default: no limit)",
           [&](const std::string& v) {
             o.max_concurrency = parse_count("--max-concurrency", v, 0, kMaxConcurrency);
           });
  p.add_flag("--single-sequence", &o.single_sequence,
             "one request after another (concurrency 1, no arrival process)");
  p.option("--seed", "S", "seed of sampling, arrivals and prompt salts (default 0)",
           [&](const std::string& v) { seed = parse_count("--seed", v, 0, INT32_MAX); });
  p.add("--slo", &slo_preset,
        "SLO preset name in configs/slo (single-1.3b, single-8b, batched-160m, batched-1.3b) or a "
        "file",
        "NAME");
  p.option("--slo-ttft-ms", "T", "TTFT target in ms (overrides the preset)",
           [&](const std::string& v) { ttft = ArgParser::parse_double("--slo-ttft-ms", v); });
  p.option("--slo-tpot-ms", "P", "TPOT target in ms (overrides the preset)",
           [&](const std::string& v) { tpot = ArgParser::parse_double("--slo-tpot-ms", v); });
  p.add("--slo-scale", &o.slo_scale, "multiply both targets by X for this machine (default 1)",
        "X");
  p.add("--slo-scales", &scales,
        "attainment curve: comma-separated scales (default 0.5,0.75,1,1.25,1.5,1.75,2,2.5,3)",
        "LIST");
  p.option(
      "--attainment-target", "F",
      "attainment that counts as meeting the SLO, for goodput (default 0.9, or the preset's); "
      "it also sets the percentile of --slo-definition percentile (0.9: P90)",
      [&](const std::string& v) { target = ArgParser::parse_double("--attainment-target", v); });
  p.add("--slo-definition", &slo_definition,
        "what meeting the SLO means for goodput: per-request (attainment >= the target; default) "
        "or percentile (the paper's: P90 TTFT and P90 TPOT within the targets, for a target of "
        "0.9)",
        "D");
  p.option(
      "--max-model-len", "L",
      "filter the dataset to input + output <= L (default: the smallest server context, else 2048)",
      [&](const std::string& v) {
        max_model_len = parse_count("--max-model-len", v, 2, kMaxModelLen);
      });
  p.add("--request-timeout", &o.timeout_s,
        "seconds a request may take, from sending to its last byte (default 600)", "S");
  p.option("--warmup", "N", "unrecorded requests per endpoint before its runs (default 0)",
           [&](const std::string& v) { o.warmup = parse_count("--warmup", v, 0, kMaxPrompts); });
  p.option("--shared-prefix-tokens", "N",
           "every prompt starts with the same N-token prefix (a system prompt) before its own "
           "(default 0)",
           [&](const std::string& v) {
             o.shared_prefix_tokens = parse_count("--shared-prefix-tokens", v, 0, kMaxModelLen);
           });
  p.add("--extra-body", &o.extra_body, "JSON object merged into every request body", "JSON");
  p.add("--api-key", &o.api_key, "sent as 'Authorization: Bearer KEY'", "KEY");
  p.option("--client-threads", "N", "client I/O threads (default 1)", [&](const std::string& v) {
    o.client_threads = parse_count("--client-threads", v, 1, kMaxClientThreads);
  });
  p.add("--output-dir", &o.output_dir,
        "write per-request and summary JSON, report.md and plots/*.png here", "DIR");
  p.add_flag("--no-plots", &no_plots, "do not draw PNGs");
  if (!p.parse(argc, argv, first_arg)) return 0;

  try {
    if (endpoints.empty()) endpoints.push_back("http://127.0.0.1:8000");
    for (const auto& e : endpoints) o.endpoints.push_back(parse_endpoint(e));
    o.api = parse_api(api);
    o.dataset = parse_dataset_spec(dataset);
    o.slo_definition = parse_slo_definition(slo_definition);
    if (slo_preset) {
      const SloPreset preset = read_slo_preset(*slo_preset);
      o.slo = {preset.ttft_ms, preset.tpot_ms};
      o.slo_name = preset.name;
      if (preset.attainment_target) o.attainment_target = *preset.attainment_target;
      if (preset.num_prompts && o.single_sequence && !num_prompts) num_prompts = preset.num_prompts;
    }
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  if (ttft) o.slo.ttft_ms = *ttft;
  if (tpot) o.slo.tpot_ms = *tpot;
  if (target) o.attainment_target = *target;
  if (!(o.slo.ttft_ms > 0) || !(o.slo.tpot_ms > 0))
    throw CliError("give the SLO: --slo-ttft-ms T and --slo-tpot-ms P (both > 0), or --slo PRESET");
  if (rate && rates) throw CliError("give --request-rate or --request-rates, not both");
  if (o.single_sequence && (rate || rates || o.max_concurrency))
    throw CliError(
        "--single-sequence sends one request at a time; drop --request-rate(s) and "
        "--max-concurrency");
  if (o.goodput_search.enabled && (rate || rates || o.single_sequence))
    throw CliError(
        "--goodput-search picks the request rates itself; drop --request-rate(s) and "
        "--single-sequence");
  if (rate) o.rates = {parse_rate("--request-rate", *rate)};
  if (rates) o.rates = parse_list("--request-rates", *rates, true);
  if (scales) o.slo_scales = parse_list("--slo-scales", *scales, false);
  o.seed = static_cast<uint64_t>(seed);
  o.num_prompts = num_prompts.value_or(o.single_sequence ? 90 : 1000);
  o.max_model_len = max_model_len;
  o.plots = !no_plots;

  ServeReport report;
  try {
    report = run_serve(o, std::cout);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  std::cout << "\n" << markdown_report(report);
  if (!report.files.empty()) {
    std::cout << "\nwrote:\n";
    for (const auto& f : report.files) std::cout << "  " << f << "\n";
  }
  // A benchmark in which no request of any endpoint succeeded measured nothing (a wrong URL, a
  // server that is down): scripts must see that in the exit status, after the report is out.
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
  return 0;
}

}  // namespace sandwich::bench
