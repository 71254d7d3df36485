#include "bench/serve.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>

#include "bench/plots.h"
#include "bench/progress.h"
#include "bench/report.h"
#include "bench/server_api.h"
#include "endpoint_runs.h"

namespace sandwich::bench {

Endpoint parse_endpoint(const std::string& text) {
  Endpoint e;
  std::string url = text;
  // LABEL=URL: the '=' must come before any "://" so that query strings stay URLs.
  const size_t eq = text.find('='), scheme = text.find("://");
  if (eq != std::string::npos && (scheme == std::string::npos || eq < scheme)) {
    e.label = text.substr(0, eq);
    url = text.substr(eq + 1);
    if (e.label.empty()) throw std::invalid_argument("empty label in --endpoint '" + text + "'");
  }
  e.url = Url::parse(url);
  if (e.url.prefix.size() >= 3 && e.url.prefix.compare(e.url.prefix.size() - 3, 3, "/v1") == 0)
    e.url.prefix.resize(e.url.prefix.size() - 3);
  if (e.label.empty()) e.label = e.url.host + ":" + std::to_string(e.url.port);
  return e;
}

int GoodputSearch::max_probes() const {
  int halvings = 0;
  for (double width = max_rate - min_rate; width > resolution && halvings < 64; width /= 2)
    ++halvings;
  return 2 + halvings;
}

namespace {

const std::vector<double> kDefaultScales = {0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3};

void validate(const ServeOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.endpoints.empty()) bad("give at least one --endpoint");
  std::set<std::string> labels;
  for (const auto& e : o.endpoints)
    if (!labels.insert(e.label).second)
      bad("two endpoints are labelled '" + e.label + "'; name them with LABEL=URL");
  if (o.num_prompts < 1 || o.num_prompts > kMaxPrompts)
    bad("--num-prompts must be 1.." + std::to_string(kMaxPrompts) + ", got " +
        std::to_string(o.num_prompts));
  if (o.rates.empty()) bad("no request rate given");
  for (double r : o.rates)
    if (!(r >= kMinRequestRate)) bad("request rates must be at least 0.001 per second (or inf)");
  if (!(o.burstiness > 0) || std::isinf(o.burstiness))
    bad("--burstiness must be a positive number");
  if (o.max_concurrency < 0 || o.max_concurrency > kMaxConcurrency)
    bad("--max-concurrency must be 1.." + std::to_string(kMaxConcurrency) + " (or 0 for no limit)");
  // None (both 0) reports latencies and throughput only.
  if ((o.slo.ttft_ms != 0 || o.slo.tpot_ms != 0) && !o.slo.given())
    bad("SLO targets must both be > 0: --slo-ttft-ms and --slo-tpot-ms, or --slo PRESET");
  if (o.goodput_search.enabled && !o.slo.given())
    bad("--goodput-search needs an SLO: --slo-ttft-ms and --slo-tpot-ms, or --slo PRESET");
  if (!(o.slo_scale > 0) || std::isinf(o.slo_scale)) bad("--slo-scale must be a positive number");
  for (double s : o.slo_scales)
    if (!(s > 0) || std::isinf(s)) bad("--slo-scales must be positive numbers");
  if (!(o.attainment_target > 0) || o.attainment_target > 1)
    bad("--attainment-target must be in (0, 1]");
  if (const GoodputSearch& g = o.goodput_search; g.enabled) {
    if (o.single_sequence) bad("--goodput-search and --single-sequence do not go together");
    if (!(g.min_rate >= kMinRequestRate) || std::isinf(g.min_rate))
      bad("--search-min-rate must be a number >= 0.001 (requests/s)");
    if (!(g.max_rate > g.min_rate) || std::isinf(g.max_rate))
      bad("--search-max-rate must be a number above --search-min-rate");
    if (!(g.resolution > 0) || std::isinf(g.resolution))
      bad("--search-resolution must be a positive number (requests/s)");
  }
  if (o.max_model_len && (*o.max_model_len < 2 || *o.max_model_len > kMaxModelLen))
    bad("--max-model-len must be 2.." + std::to_string(kMaxModelLen));
  if (!(o.timeout_s > 0) || o.timeout_s > kMaxRequestTimeout)
    bad("--request-timeout must be > 0 and at most " +
        std::to_string(static_cast<int64_t>(kMaxRequestTimeout)) + " s");
  if (o.shared_prefix_tokens < 0 || o.shared_prefix_tokens > kMaxModelLen)
    bad("--shared-prefix-tokens must be 0.." + std::to_string(kMaxModelLen));
  if (o.warmup < 0 || o.warmup > kMaxPrompts)
    bad("--warmup must be 0.." + std::to_string(kMaxPrompts));
  if (o.client_threads < 1 || o.client_threads > kMaxClientThreads)
    bad("--client-threads must be 1.." + std::to_string(kMaxClientThreads));
  openai_request_body(o.api, "m", "p", 1, o.extra_body);  // rejects a bad --extra-body now
}

// The options as run: --single-sequence as one request at a time, released at once; the
// attainment curve's scales sorted without repeats; a goodput search picks the rates itself.
ServeReport start_report(const ServeOptions& options) {
  ServeReport rep;
  rep.options = options;
  ServeOptions& o = rep.options;
  if (o.single_sequence) {
    o.max_concurrency = 1;
    o.rates = {std::numeric_limits<double>::infinity()};
  }
  validate(o);
  rep.scales = o.slo_scales.empty() ? kDefaultScales : o.slo_scales;
  std::sort(rep.scales.begin(), rep.scales.end());
  rep.scales.erase(std::unique(rep.scales.begin(), rep.scales.end()), rep.scales.end());
  if (o.goodput_search.enabled) o.rates.clear();
  return rep;
}

// Each endpoint's model and context; returns the smallest context any reported.
std::optional<int> probe_endpoints(HttpClient& client, ServeReport& rep, std::ostream& log) {
  const ServeOptions& o = rep.options;
  const double probe_timeout = std::min(o.timeout_s, 30.0);
  std::optional<int> smallest_ctx;
  for (const auto& ep : o.endpoints) {
    EndpointReport er;
    er.label = ep.label;
    er.url = ep.url.str();
    const ServerInfo info = probe_server(client, ep.url, o.api_key, probe_timeout);
    er.model = o.model.empty() ? info.model : o.model;
    er.server_max_model_len = info.max_model_len;
    if (!info.error.empty()) er.notes.push_back("asking for the model: " + info.error);
    if (er.model.empty())
      er.notes.push_back(
          "model unknown (no --model, no /v1/models): requests carry no model field");
    if (info.max_model_len)
      smallest_ctx = std::min(smallest_ctx.value_or(*info.max_model_len), *info.max_model_len);
    log << "[" << er.label << "] " << er.url << " model '" << er.model << "'"
        << (info.max_model_len ? ", context " + std::to_string(*info.max_model_len) : std::string())
        << "\n";
    rep.endpoints.push_back(std::move(er));
  }
  return smallest_ctx;
}

// The dataset's length pairs, filtered to the context (--max-model-len, else the smallest
// server's) after the shared prefix.
void sample_dataset(ServeReport& rep, std::optional<int> smallest_ctx) {
  const ServeOptions& o = rep.options;
  if (o.max_model_len) {
    rep.max_model_len = *o.max_model_len;
  } else if (smallest_ctx) {
    rep.max_model_len = *smallest_ctx;
  } else {
    rep.max_model_len = 2048;
    rep.notes.push_back(
        "no server reported its context length: the dataset was filtered to 2048 tokens "
        "(set --max-model-len)");
  }
  if (o.shared_prefix_tokens > 0) {
    if (o.shared_prefix_tokens > rep.max_model_len - 8)
      throw std::invalid_argument("--shared-prefix-tokens " +
                                  std::to_string(o.shared_prefix_tokens) +
                                  " leaves too little of the context (" +
                                  std::to_string(rep.max_model_len) + " tokens) for the prompts");
    rep.notes.push_back("every prompt starts with the same " +
                        std::to_string(o.shared_prefix_tokens) +
                        "-token prefix (--shared-prefix-tokens); the dataset's lengths follow it");
  }
  rep.lengths = sample_lengths(o.dataset, o.num_prompts, o.seed,
                               rep.max_model_len - o.shared_prefix_tokens, o.dataset_path);
}

// Salts differ between runs and between invocations, so no run finds another's prompts in a
// server's prefix cache (a sweep re-sending the same prompts handed llama-server KV-cache hits
// at every rate after the first). Lengths and arrivals stay those of --seed.
PromptSalts prompt_salts(const ServeOptions& o, int per_run) {
  const int64_t runs_per_endpoint = o.goodput_search.enabled ? o.goodput_search.max_probes()
                                                             : static_cast<int64_t>(o.rates.size());
  const int64_t salts = static_cast<int64_t>(per_run) * (runs_per_endpoint + 1);
  const int64_t invocations = std::max<int64_t>(1, std::min<int64_t>(4096, (INT_MAX - 1) / salts));
  const int invocation =
      static_cast<int>(std::random_device{}() % static_cast<uint64_t>(invocations));
  const int first = static_cast<int>(invocation * salts);
  // Runs use salts first + per_run * run + i with i < n <= per_run: the last one is free.
  return {first, per_run, first + static_cast<int>(salts) - 1};
}

}  // namespace

ServeReport run_serve(const ServeOptions& options, std::ostream& log) {
  ServeReport rep = start_report(options);
  const ServeOptions& o = rep.options;
  HttpClient client(o.client_threads);
  TerminalProgress progress;
  sample_dataset(rep, probe_endpoints(client, rep, log));

  // The requests' prompt lengths, then the warm-up requests' (the dataset's again).
  const size_t n = rep.lengths.size();
  std::vector<int> prompt_lens;
  for (const auto& p : rep.lengths) prompt_lens.push_back(p.input);
  for (size_t w = 0; w < static_cast<size_t>(o.warmup); ++w)
    prompt_lens.push_back(rep.lengths[w % n].input);
  const PromptSalts salts = prompt_salts(o, static_cast<int>(prompt_lens.size()));
  for (size_t e = 0; e < o.endpoints.size(); ++e)
    run_endpoint(client, progress, rep, e, prompt_lens, salts, log);

  if (!o.output_dir.empty()) {
    if (o.plots) rep.files = write_plots(rep, o.output_dir, log);
    auto written = write_report_files(rep, o.output_dir);
    rep.files.insert(rep.files.end(), written.begin(), written.end());
  }
  return rep;
}

}  // namespace sandwich::bench
