#pragma once
// `sandwich-bench serve`: the whole comparison. For every endpoint: ask its model and context,
// build prompts with its tokenizer, run the trace at each request rate (or at the rates a
// goodput search probes); then summaries, SLO attainment (per rate and per SLO scale), goodput,
// JSON, a Markdown table and plots.
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/dataset.h"
#include "bench/http_client.h"
#include "bench/metrics.h"
#include "bench/openai_client.h"

namespace sandwich::bench {

struct Endpoint {
  std::string label;  // name in tables and plots
  Url url;
};
// "[LABEL=]URL"; a trailing /v1 on the URL is dropped (OpenAI base URLs carry it, the routes
// are appended here). The label defaults to host:port. Throws std::invalid_argument.
Endpoint parse_endpoint(const std::string& text);

// Limits of the options: far beyond any useful benchmark, and low enough that a typo (an extra
// digit or two) is an error instead of a run that never ends or a count that wraps.
constexpr int kMaxPrompts = 1'000'000;      // --num-prompts, --warmup
constexpr int kMaxConcurrency = 1'000'000;  // --max-concurrency
constexpr int kMaxModelLen = 1 << 24;       // --max-model-len
constexpr int kMaxClientThreads = 64;       // --client-threads
constexpr double kMinRequestRate = 0.001;   // req/s (messages say 0.001): a mean gap of 1000 s
constexpr double kMaxRequestTimeout = 1e6;  // seconds (11.6 days)

// Goodput by bisection over the request rate: probe the lower bound (a miss: goodput is below
// it), the upper bound (a hit: goodput is at least it), then halve the bracket [hit, miss) until
// it is at most `resolution` wide. Each probe is a run of --num-prompts requests with arrivals
// of the configured burstiness (1: Poisson). Assumes the SLO is met below some rate and missed
// above it; a noisy server can make a probe lie, as it would in a sweep.
struct GoodputSearch {
  bool enabled = false;
  double min_rate = 0.25, max_rate = 16;  // req/s
  double resolution = 0.25;               // req/s: the width of the final bracket, at most
  // Probes the search may need: the two bounds and the halvings.
  int max_probes() const;
};

struct ServeOptions {
  std::vector<Endpoint> endpoints;
  std::string model;  // "" = each server's first /v1/models id
  Api api = Api::Completions;
  DatasetSpec dataset;
  std::string dataset_path;  // ShareGPT CSV override
  int num_prompts = 1000;
  std::vector<double> rates = {std::numeric_limits<double>::infinity()};
  double burstiness = 1;
  int max_concurrency = 0;       // 0: no limit
  bool single_sequence = false;  // one request at a time (concurrency 1, released at once)
  uint64_t seed = 0;
  Slo slo;
  std::string slo_name;  // the preset, if one was used
  double slo_scale = 1;
  std::vector<double> slo_scales;  // attainment curve; empty: a default 0.5..3 grid
  double attainment_target = 0.9;
  SloDefinition slo_definition = SloDefinition::PerRequest;  // what meeting the SLO is, for goodput
  GoodputSearch goodput_search;                              // replaces rates when enabled
  std::optional<int> max_model_len;  // default: the smallest context among the endpoints, else 2048
  double timeout_s = 600;
  int warmup = 0;  // unrecorded requests per endpoint before its runs
  // Every prompt starts with the same prefix of this many tokens (a system prompt), then its own
  // salted prompt of the dataset's length: what a server's prefix cache is for.
  int shared_prefix_tokens = 0;
  std::string extra_body;
  std::string api_key;
  int client_threads = 1;
  std::string output_dir;  // "" = print only
  bool plots = true;
};

struct RunReport {
  std::string label, url, model;
  double rate = 0;
  int probe = 0;  // 1, 2, ... for a goodput search's probes; 0 for a run of the given rates
  std::vector<RequestRecord> records;
  Summary summary;
  std::vector<std::pair<double, double>> scale_curve;  // (SLO scale, attainment)
};

struct EndpointReport {
  std::string label, url, model;
  std::string tokenizer;  // "vllm", "llama.cpp" (its /tokenize) or "approximate"
  std::optional<int> server_max_model_len;
  int prompts_exact = 0, prompts = 0;
  std::vector<std::string> notes;
  // Goodput: the highest rate run that met the SLO (every lower run too); none when the lowest
  // missed. goodput_miss_rate: the lowest rate run above it that missed (none when none did), so
  // goodput lies in [goodput_rate, goodput_miss_rate).
  std::optional<double> goodput_rate, goodput_miss_rate;
};

struct ServeReport {
  ServeOptions options;
  std::vector<double> scales;  // the attainment curve's SLO scales
  int max_model_len = 0;       // what the dataset was filtered by
  std::vector<LengthPair> lengths;
  std::vector<EndpointReport> endpoints;
  std::vector<RunReport> runs;  // endpoint-major, then rate
  std::vector<std::string> notes;
  std::vector<std::string> files;  // written under output_dir
};

// Runs everything; progress and per-run summaries go to log. Throws std::invalid_argument for
// bad options or datasets; server failures are recorded in the report instead.
ServeReport run_serve(const ServeOptions& options, std::ostream& log);

// The subcommand: parses argv[first_arg..], runs, prints the comparison table. Throws
// sandwich::CliError for bad input.
int bench_serve_main(int argc, char** argv, int first_arg);

}  // namespace sandwich::bench
