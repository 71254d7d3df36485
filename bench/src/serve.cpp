#include "bench/serve.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>

#include "bench/arrivals.h"
#include "bench/plots.h"
#include "bench/progress.h"
#include "bench/prompts.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/server_api.h"

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
  if (!(o.slo.ttft_ms > 0) || !(o.slo.tpot_ms > 0))
    bad("SLO targets are required: --slo-ttft-ms and --slo-tpot-ms (> 0), or --slo PRESET");
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

// Prompts for one endpoint: exact under its tokenizer when it has one, else approximate. With
// --shared-prefix-tokens each starts with the same prefix (salted by prefix_salt, so that it is
// new to the server in each invocation).
std::vector<BuiltPrompt> build_prompts(HttpClient& client, const Endpoint& ep, EndpointReport& er,
                                       const ServeOptions& o, const std::vector<int>& lengths,
                                       int salt0, int prefix_salt, std::ostream& log) {
  RemoteTokenizer tok(client, ep.url, er.model, o.api, o.api_key, std::min(o.timeout_s, 60.0));
  const TokenizerStyle style = tok.probe();
  std::vector<BuiltPrompt> out;
  out.reserve(lengths.size());
  if (style == TokenizerStyle::None) {
    er.tokenizer = "approximate";
    er.notes.push_back(
        "no usable /tokenize and /detokenize: prompt lengths are approximate (one token per common "
        "English word plus one BOS token); the usage block's prompt_tokens shows the real count");
  } else {
    er.tokenizer = std::string(name_of(style, kTokenizerStyleNames));
    if (o.api == Api::Chat && !tok.counts_template())
      er.notes.push_back(
          "chat: the server cannot tokenize messages, so prompt lengths count the message text "
          "without the chat template's tokens");
    log << "[" << ep.label << "] building " << lengths.size()
        << " prompts with the server's tokenizer (" << er.tokenizer << " /tokenize)\n";
  }
  PromptBuilder builder(tok, o.seed);
  bool exact_ok = style != TokenizerStyle::None;
  const int n_prefix = o.shared_prefix_tokens;
  BuiltPrompt prefix;
  if (n_prefix > 0) {
    try {
      if (exact_ok) prefix = builder.build(prefix_salt, n_prefix);
    } catch (const std::exception& e) {
      exact_ok = false;
      er.tokenizer = "approximate";
      er.notes.push_back(std::string("tokenizing failed (") + e.what() +
                         "); the shared prefix and all prompts are approximate");
    }
    if (!exact_ok) prefix = approximate_prompt(prefix_salt, n_prefix, o.seed);
  }
  // The prompt after the prefix is built one token longer: its BOS does not count once joined.
  auto join = [&](BuiltPrompt p, bool exact) {
    if (n_prefix == 0) return p;
    p.text = prefix.text + " " + p.text;
    const int want = p.tokens + n_prefix - 1;
    p.tokens = exact ? tok.count_prompt(p.text) : want;
    p.exact = exact && p.tokens == want;
    return p;
  };
  const int extra = n_prefix > 0 ? 1 : 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int idx = salt0 + static_cast<int>(i);
    if (exact_ok) {
      try {
        out.push_back(join(builder.build(idx, lengths[i] + extra), true));
        continue;
      } catch (const std::exception& e) {
        exact_ok = false;
        er.tokenizer = "approximate";
        er.notes.push_back(std::string("tokenizing failed (") + e.what() + "); prompts from #" +
                           std::to_string(i) + " on are approximate");
      }
    }
    out.push_back(join(approximate_prompt(idx, lengths[i] + extra, o.seed), false));
  }
  return out;
}

}  // namespace

ServeReport run_serve(const ServeOptions& options, std::ostream& log) {
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

  if (o.goodput_search.enabled) o.rates.clear();  // the search picks them
  HttpClient client(o.client_threads);
  TerminalProgress progress;
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
  // The dataset's pairs fit after the shared prefix.
  rep.lengths = sample_lengths(o.dataset, o.num_prompts, o.seed,
                               rep.max_model_len - o.shared_prefix_tokens, o.dataset_path);

  const size_t n = rep.lengths.size();
  std::vector<int> prompt_lens;
  for (const auto& p : rep.lengths) prompt_lens.push_back(p.input);
  for (size_t w = 0; w < static_cast<size_t>(o.warmup); ++w)
    prompt_lens.push_back(rep.lengths[w % n].input);

  // Salts differ between runs and between invocations, so no run finds another's prompts in a
  // server's prefix cache (a sweep re-sending the same prompts handed llama-server KV-cache hits
  // at every rate after the first). Lengths and arrivals stay those of --seed.
  const int per_run = static_cast<int>(prompt_lens.size());
  const int64_t runs_per_endpoint = o.goodput_search.enabled ? o.goodput_search.max_probes()
                                                             : static_cast<int64_t>(o.rates.size());
  const int64_t salts = static_cast<int64_t>(per_run) * (runs_per_endpoint + 1);
  const int64_t invocations = std::max<int64_t>(1, std::min<int64_t>(4096, (INT_MAX - 1) / salts));
  const int invocation =
      static_cast<int>(std::random_device{}() % static_cast<uint64_t>(invocations));
  for (size_t e = 0; e < o.endpoints.size(); ++e) {
    const Endpoint& ep = o.endpoints[e];
    EndpointReport& er = rep.endpoints[e];
    const int salt0 = static_cast<int>(invocation * salts);
    // Runs use salts salt0 + per_run * run + i with i < n <= per_run: the last one is free.
    const int prefix_salt = salt0 + static_cast<int>(salts) - 1;
    const std::vector<BuiltPrompt> built =
        build_prompts(client, ep, er, o, prompt_lens, salt0, prefix_salt, log);
    std::vector<BenchRequest> requests, warmups;
    for (size_t i = 0; i < built.size(); ++i) {
      const LengthPair& len = rep.lengths[i % n];
      BenchRequest q{built[i].text, len.input + o.shared_prefix_tokens, built[i].tokens,
                     len.output};
      if (i < n) {
        er.prompts_exact += built[i].exact;
        ++er.prompts;
        requests.push_back(std::move(q));
      } else {
        warmups.push_back(std::move(q));
      }
    }
    if (er.tokenizer != "approximate" && er.prompts_exact < er.prompts)
      er.notes.push_back(
          std::to_string(er.prompts - er.prompts_exact) +
          " prompts could not be built to their exact length (a token merge at the seam); the "
          "closest was used");
    RunOptions ro;
    ro.url = ep.url;
    ro.api = o.api;
    ro.model = er.model;
    ro.extra_body = o.extra_body;
    ro.bearer = o.api_key;
    ro.timeout_s = o.timeout_s;
    if (!warmups.empty()) {
      log << "[" << ep.label << "] " << warmups.size() << " warm-up requests\n";
      RunOptions one = ro;
      one.max_concurrency = 1;
      const auto recs =
          run_requests(client, one, warmups, std::vector<double>(warmups.size(), 0.0));
      const auto failed =
          std::count_if(recs.begin(), recs.end(), [](const RequestRecord& r) { return !r.ok; });
      if (failed)
        er.notes.push_back(std::to_string(failed) + " of " + std::to_string(recs.size()) +
                           " warm-up requests failed");
    }
    ro.max_concurrency = o.max_concurrency;
    std::string step;  // what the progress line calls the current run
    ro.progress = [&log, &ep, &progress, &step](const RunProgress& p) {
      if (progress.enabled()) return progress.update(ep.label, step, p);
      // Without a terminal, a line per tenth of a long run, so a person reading the log sees
      // it move.
      if (p.total >= 50 && p.done * 10 / p.total != (p.done - 1) * 10 / p.total)
        log << "[" << ep.label << "]   " << p.done << " / " << p.total << " requests done\n"
            << std::flush;
    };
    int run_index = 0;
    // One run at this rate, with fresh salts for every run after the first.
    auto run_at = [&](double rate, int probe) -> const RunReport& {
      if (run_index > 0) {
        const std::vector<int> lens(prompt_lens.begin(),
                                    prompt_lens.begin() + static_cast<std::ptrdiff_t>(n));
        const auto again =
            build_prompts(client, ep, er, o, lens, salt0 + per_run * run_index, prefix_salt, log);
        for (size_t i = 0; i < n; ++i) {
          requests[i].prompt = again[i].text;
          requests[i].prompt_tokens = again[i].tokens;
        }
      }
      ++run_index;
      step = probe > 0 ? "probe " + std::to_string(probe) + ", " + rate_with_unit(rate)
                       : rate_with_unit(rate);
      log << "[" << ep.label << "] "
          << (probe > 0 ? "goodput search, probe " + std::to_string(probe) + " of at most " +
                              std::to_string(o.goodput_search.max_probes()) + ": "
                        : std::string())
          << n << " requests, " << rate_with_unit(rate)
          << (o.max_concurrency > 0 ? ", concurrency <= " + std::to_string(o.max_concurrency)
                                    : std::string())
          << "\n";
      RunReport run;
      run.label = ep.label;
      run.url = er.url;
      run.model = er.model;
      run.rate = rate;
      run.probe = probe;
      run.records = run_requests(client, ro, requests,
                                 arrival_times(static_cast<int>(n), rate, o.burstiness, o.seed));
      progress.clear();
      run.summary = summarize(run.records, o.slo, o.slo_scale, o.attainment_target);
      for (double s : rep.scales) run.scale_curve.push_back({s, attainment(run.records, o.slo, s)});
      log << format_run_summary(run, o.attainment_target);
      rep.runs.push_back(std::move(run));
      return rep.runs.back();
    };
    auto meets = [&](const RunReport& run) {
      return run_meets_slo(run.summary, o.slo_definition, o.attainment_target);
    };
    if (const GoodputSearch& g = o.goodput_search; g.enabled) {
      int probe = 0;
      if (!meets(run_at(g.min_rate, ++probe))) {
        er.goodput_miss_rate = g.min_rate;
      } else if (meets(run_at(g.max_rate, ++probe))) {
        er.goodput_rate = g.max_rate;
      } else {
        double hit = g.min_rate, miss = g.max_rate;
        while (miss - hit > g.resolution && probe < g.max_probes()) {
          const double mid = (hit + miss) / 2;
          (meets(run_at(mid, ++probe)) ? hit : miss) = mid;
        }
        er.goodput_rate = hit;
        er.goodput_miss_rate = miss;
      }
    } else {
      std::vector<std::pair<double, bool>> rate_met;
      for (double rate : o.rates) rate_met.push_back({rate, meets(run_at(rate, 0))});
      er.goodput_rate = goodput_rate(rate_met);
      std::sort(rate_met.begin(), rate_met.end());
      for (const auto& [rate, met] : rate_met)
        if (!met) {
          er.goodput_miss_rate = rate;
          break;
        }
    }
  }

  if (!o.output_dir.empty()) {
    if (o.plots) rep.files = write_plots(rep, o.output_dir, log);
    auto written = write_report_files(rep, o.output_dir);
    rep.files.insert(rep.files.end(), written.begin(), written.end());
  }
  return rep;
}

}  // namespace sandwich::bench
