#pragma once
// `sandwich-bench serve`: the whole comparison. For every endpoint: ask its model and context,
// build prompts with its tokenizer, run the trace at each request rate; then summaries, SLO
// attainment (per rate and per SLO scale), goodput, JSON, a Markdown table and plots.
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
  std::optional<double> goodput_rate;  // highest rate with attainment >= target
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
