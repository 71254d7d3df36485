#include "bench/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace sandwich::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string rate_label(double rate) {
  return std::isinf(rate) ? "all at once" : rate_file_label(rate);
}

std::string rate_with_unit(double rate) {
  return std::isinf(rate) ? "all at once" : rate_file_label(rate) + " req/s";
}

std::string rate_file_label(double rate) {
  if (std::isinf(rate)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", rate);
  return buf;
}

std::string ms_label(double ms) {
  char buf[48];
  if (ms >= 1000)
    std::snprintf(buf, sizeof buf, "%g s", ms / 1000);
  else
    std::snprintf(buf, sizeof buf, "%g ms", ms);
  return buf;
}

// Every field under its own name.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Distribution, count, mean, median, p90, p99, min, max)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Slo, ttft_ms, tpot_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PercentileSlo, percentile, ttft_ms, tpot_ms, met)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Summary, requests, completed, failed, errors, duration_s,
                                   total_input_tokens, total_output_tokens, request_throughput,
                                   output_throughput, total_token_throughput, ttft_ms, tpot_ms,
                                   itl_ms, e2el_ms, prompt_tokens, output_tokens, slo, slo_scale,
                                   good, attainment, ttft_attainment, tpot_attainment,
                                   percentile_slo, good_request_rate, output_len_mismatch,
                                   prompt_len_mismatch)

namespace {

std::string fmt(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string errors_text(const Summary& s) {
  std::string out;
  for (const auto& [kind, count] : s.errors)
    out += (out.empty() ? "" : ", ") + kind + ": " + std::to_string(count);
  return out;
}

json rate_json(double rate) {
  return std::isinf(rate) ? json("inf") : json(rate);
}

json optional_rate_json(const std::optional<double>& rate) {
  return rate ? rate_json(*rate) : json(nullptr);
}

// "P90"
std::string percentile_name(double percentile) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "P%g", percentile);
  return buf;
}

// "P90 TTFT <= 200 ms and P90 TPOT <= 100 ms"
std::string percentile_slo_text(const Summary& s) {
  const std::string p = percentile_name(s.percentile_slo.percentile);
  std::ostringstream o;
  o << p << " TTFT <= " << ms_label(s.slo.ttft_ms * s.slo_scale) << " and " << p
    << " TPOT <= " << ms_label(s.slo.tpot_ms * s.slo_scale);
  return o.str();
}

// A P90 over no completed request is no figure at all (the JSON says null).
std::string p90_text(const Distribution& d) {
  return d.count == 0 ? std::string("n/a") : fmt(d.p90, 1);
}

std::string ms_or_never(double ms) {
  return std::isinf(ms) ? std::string("inf (failures)") : fmt(ms);
}

// The goodput of one endpoint, with the bracket it was found in.
std::string goodput_text(const EndpointReport& e, const ServeOptions& o) {
  const double lowest =
      o.goodput_search.enabled
          ? o.goodput_search.min_rate
          : (o.rates.empty() ? 0 : *std::min_element(o.rates.begin(), o.rates.end()));
  if (!e.goodput_rate) return "< " + rate_label(e.goodput_miss_rate.value_or(lowest));
  if (!e.goodput_miss_rate)
    return (o.goodput_search.enabled || std::isinf(*e.goodput_rate) ? ">= " : "") +
           rate_label(*e.goodput_rate);
  return rate_label(*e.goodput_rate) + " (misses at " + rate_label(*e.goodput_miss_rate) + ")";
}

json summary_to_json(const Summary& s) {
  json j = s;
  j.erase("slo_scale");
  if (!s.slo.given()) {
    // Nothing was judged: null, never an attainment of 0.
    for (const char* k : {"slo", "good", "attainment", "ttft_attainment", "tpot_attainment",
                          "percentile_slo", "good_request_rate"})
      j[k] = nullptr;
    return j;
  }
  // The SLO with the scale the requests were judged at.
  j["slo"]["scale"] = s.slo_scale;
  return j;
}

json curve_json(const std::vector<std::pair<double, double>>& c) {
  json a = json::array();
  for (const auto& [s, v] : c) a.push_back({{"slo_scale", s}, {"attainment", v}});
  return a;
}

std::string file_stem(const std::string& label) {
  std::string s = label;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return s;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// An endpoint's runs in increasing rate (all at once last), each rate once: the last run at it
// (a goodput search may probe a rate again).
std::vector<const RunReport*> runs_by_rate(const ServeReport& r, const std::string& label) {
  std::vector<const RunReport*> out;
  for (const auto& run : r.runs) {
    if (run.label != label) continue;
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const RunReport* x) { return x->rate == run.rate; });
    if (same != out.end())
      *same = &run;
    else
      out.push_back(&run);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RunReport* a, const RunReport* b) { return a->rate < b->rate; });
  return out;
}

// What the P90-vs-rate pictures plot: per rate, the P90s over completed requests (null where
// none completed).
json p90_vs_rate_json(const ServeReport& r, const std::string& label) {
  json a = json::array();
  for (const RunReport* run : runs_by_rate(r, label)) {
    const Summary& s = run->summary;
    auto p90 = [&](const Distribution& d) { return d.count ? json(d.p90) : json(nullptr); };
    a.push_back({{"request_rate", rate_json(run->rate)},
                 {"completed", s.completed},
                 {"ttft_ms", p90(s.ttft_ms)},
                 {"tpot_ms", p90(s.tpot_ms)},
                 {"e2el_ms", p90(s.e2el_ms)}});
  }
  return a;
}

}  // namespace

std::string format_run_summary(const RunReport& run, double attainment_target) {
  const Summary& s = run.summary;
  std::ostringstream o;
  auto row = [&](const std::string& name, const std::string& value) {
    o << name << std::string(name.size() < 41 ? 41 - name.size() : 1, ' ') << value << "\n";
  };
  auto section = [&](const std::string& title) {
    const size_t len = std::min<size_t>(title.size(), 48), left = (50 - len) / 2;
    o << std::string(left, '-') << title << std::string(50 - len - left, '-') << "\n";
  };
  auto dist = [&](const char* name, const Distribution& d) {
    row(std::string("Mean ") + name + " (ms):", fmt(d.mean));
    row(std::string("Median ") + name + " (ms):", fmt(d.median));
    row(std::string("P90 ") + name + " (ms):", fmt(d.p90));
    row(std::string("P99 ") + name + " (ms):", fmt(d.p99));
  };
  o << "============ Serving Benchmark Result ============\n";
  row("Endpoint:", run.label + " (" + run.url + ")");
  row("Request rate (req/s):", rate_label(run.rate));
  if (run.probe > 0) row("Goodput search probe:", std::to_string(run.probe));
  row("Successful requests:", std::to_string(s.completed));
  row("Failed requests:", std::to_string(s.failed) + (s.failed ? " (" + errors_text(s) + ")" : ""));
  row("Benchmark duration (s):", fmt(s.duration_s));
  row("Total input tokens:", std::to_string(s.total_input_tokens));
  row("Total generated tokens:", std::to_string(s.total_output_tokens));
  row("Request throughput (req/s):", fmt(s.request_throughput));
  row("Output token throughput (tok/s):", fmt(s.output_throughput));
  row("Total token throughput (tok/s):", fmt(s.total_token_throughput));
  section("Time to First Token");
  dist("TTFT", s.ttft_ms);
  section("Time per Output Token (excl. 1st token)");
  dist("TPOT", s.tpot_ms);
  section("Inter-token Latency");
  dist("ITL", s.itl_ms);
  section("End-to-end Latency");
  dist("E2EL", s.e2el_ms);
  section("SLO");
  if (!s.slo.given()) {
    row("SLO:", "none given (--slo, or --slo-ttft-ms and --slo-tpot-ms)");
  } else {
    row("SLO (ms):", "TTFT <= " + fmt(s.slo.ttft_ms * s.slo_scale, 1) + ", TPOT <= " +
                         fmt(s.slo.tpot_ms * s.slo_scale, 1) + " (scale " + fmt(s.slo_scale) + ")");
    row("SLO attainment, per request (%):",
        fmt(100 * s.attainment) + (s.attainment >= attainment_target ? "" : "  (below target)"));
    row("TTFT / TPOT limit met (%):",
        fmt(100 * s.ttft_attainment) + " / " + fmt(100 * s.tpot_attainment));
    const std::string p = percentile_name(s.percentile_slo.percentile);
    row(p + " TTFT / " + p + " TPOT (ms):",
        ms_or_never(s.percentile_slo.ttft_ms) + " / " + ms_or_never(s.percentile_slo.tpot_ms));
    row(percentile_slo_text(s) + ":", s.percentile_slo.met ? "met" : "missed");
    row("Good request rate (req/s):", fmt(s.good_request_rate));
  }
  if (s.output_len_mismatch)
    row("Output length != max_tokens:", std::to_string(s.output_len_mismatch) + " requests");
  o << "==================================================\n";
  return o.str();
}

std::string markdown_report(const ServeReport& r) {
  const ServeOptions& o = r.options;
  std::ostringstream m;
  const std::string target = fmt(100 * o.attainment_target, 0) + "%";
  m << "# Serving benchmark\n\n";
  m << "- dataset: " << o.dataset.describe() << ", " << r.lengths.size() << " requests, seed "
    << o.seed << ", filtered to input + output <= " << r.max_model_len << " tokens\n";
  m << "- API: " << api_name(o.api)
    << ", streamed, max_tokens from the trace with ignore_eos, greedy\n";
  if (o.single_sequence)
    m << "- single sequence: one request at a time\n";
  else
    m << "- arrivals: gamma, burstiness " << o.burstiness << "; max concurrency "
      << (o.max_concurrency > 0 ? std::to_string(o.max_concurrency) : std::string("unlimited"))
      << "\n";
  const bool slo = o.slo.given();
  if (!slo)
    m << "- SLO: none given, so latencies and throughput only (--slo PRESET, or --slo-ttft-ms and "
         "--slo-tpot-ms, add attainment and goodput)\n\n";
  else
    m << "- SLO: TTFT <= " << fmt(o.slo.ttft_ms * o.slo_scale, 1)
      << " ms and TPOT <= " << fmt(o.slo.tpot_ms * o.slo_scale, 1) << " ms ("
      << (o.slo_name.empty() ? "given" : "preset " + o.slo_name) << ": " << fmt(o.slo.ttft_ms, 0)
      << " / " << fmt(o.slo.tpot_ms, 0) << " ms, scale " << fmt(o.slo_scale)
      << "); attainment target " << target << "; goodput judges a run "
      << (o.slo_definition == SloDefinition::Percentile
              ? "by P" + fmt(100 * o.attainment_target, 0) + " TTFT and TPOT against the targets"
              : "by its per-request attainment")
      << "\n\n";

  m << "## Endpoints\n\n| endpoint | URL | model | prompts built with | exact-length prompts "
       "|\n|---|---|---|---|---|\n";
  for (const auto& e : r.endpoints)
    m << "| " << e.label << " | " << e.url << " | " << (e.model.empty() ? "?" : e.model) << " | "
      << (e.tokenizer == "approximate" ? "approximation (no /tokenize)"
                                       : e.tokenizer + " /tokenize")
      << " | " << e.prompts_exact << " / " << e.prompts << " |\n";

  const std::string pct = percentile_name(100 * o.attainment_target);
  m << "\n## Results\n\nTimes in ms; TPOT = (E2E - TTFT) / (output tokens - 1); attainment = "
       "requests meeting both SLOs / requests sent; "
    << pct << " SLO = " << pct << " TTFT and " << pct
    << " TPOT within the targets, failures counted as infinitely slow; good req/s = requests "
       "meeting both SLOs / run duration (not goodput, which is a rate: below).\n\n";
  m << "| endpoint | rate (req/s) | ok / sent | errors | req/s | out tok/s | TTFT mean | TTFT P50 "
       "| TTFT P90 | TTFT P99 "
       "| TPOT mean | TPOT P50 | TPOT P90 | TPOT P99 | ITL P99 | E2E P50 | E2E P99 | attainment | "
    << pct << " SLO | good req/s |\n";
  m << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& run : r.runs) {
    const Summary& s = run.summary;
    const std::string errs = errors_text(s);
    m << "| " << run.label << " | " << rate_label(run.rate) << " | " << s.completed << " / "
      << s.requests << " | " << (errs.empty() ? "-" : errs) << " | " << fmt(s.request_throughput)
      << " | " << fmt(s.output_throughput, 1) << " | " << fmt(s.ttft_ms.mean, 1) << " | "
      << fmt(s.ttft_ms.median, 1) << " | " << fmt(s.ttft_ms.p90, 1) << " | "
      << fmt(s.ttft_ms.p99, 1) << " | " << fmt(s.tpot_ms.mean, 1) << " | "
      << fmt(s.tpot_ms.median, 1) << " | " << fmt(s.tpot_ms.p90, 1) << " | "
      << fmt(s.tpot_ms.p99, 1) << " | " << fmt(s.itl_ms.p99, 1) << " | " << fmt(s.e2el_ms.median, 1)
      << " | " << fmt(s.e2el_ms.p99, 1) << " | ";
    if (slo)
      m << fmt(100 * s.attainment, 1) << "% | " << (s.percentile_slo.met ? "met" : "missed")
        << " | " << fmt(s.good_request_rate) << " |\n";
    else
      m << "n/a | n/a | n/a |\n";
  }

  const std::string criterion = o.slo_definition == SloDefinition::Percentile
                                    ? pct + " TTFT and " + pct + " TPOT stay within the targets"
                                    : "SLO attainment stays >= " + target;
  if (!slo) {
    // Neither goodput nor the attainment curve without an SLO.
  } else if (const GoodputSearch& g = o.goodput_search; g.enabled) {
    m << "\n## Goodput\n\nThe highest request rate at which " << criterion
      << ", found by bisection between " << rate_with_unit(g.min_rate) << " and "
      << rate_with_unit(g.max_rate) << " to a resolution of " << rate_with_unit(g.resolution)
      << " (each probe " << r.lengths.size() << " requests at burstiness " << o.burstiness
      << ").\n\n| endpoint | goodput (req/s) | probes |\n|---|---|---|\n";
    for (const auto& e : r.endpoints) {
      int probes = 0;
      for (const auto& run : r.runs) probes += run.label == e.label && run.probe > 0;
      m << "| " << e.label << " | " << goodput_text(e, o) << " | " << probes << " |\n";
    }
  } else if (o.rates.size() > 1) {
    m << "\n## Goodput\n\nThe highest request rate at which " << criterion
      << " (at every tested rate up to it), read off the sweep: the true value lies between it "
         "and the next rate tested.\n\n| endpoint | goodput (req/s) |\n|---|---|\n";
    for (const auto& e : r.endpoints) m << "| " << e.label << " | " << goodput_text(e, o) << " |\n";
  }

  // The data of the P90-vs-rate pictures, one endpoint after another, when runs span rates.
  std::vector<double> rates;
  for (const auto& run : r.runs)
    if (std::find(rates.begin(), rates.end(), run.rate) == rates.end()) rates.push_back(run.rate);
  if (rates.size() > 1) {
    m << "\n## P90 latency vs request rate\n\nOver completed requests, in ms (the P90 TTFT and P90 "
         "TPOT pictures)"
      << (slo ? "; SLO TTFT <= " + ms_label(o.slo.ttft_ms * o.slo_scale) +
                    ", TPOT <= " + ms_label(o.slo.tpot_ms * o.slo_scale)
              : std::string())
      << ".\n\n| endpoint | rate (req/s) | ok / sent | P90 TTFT | P90 TPOT | P90 E2E |\n"
         "|---|---|---|---|---|---|\n";
    for (const auto& e : r.endpoints)
      for (const RunReport* run : runs_by_rate(r, e.label)) {
        const Summary& s = run->summary;
        m << "| " << e.label << " | " << rate_label(run->rate) << " | " << s.completed << " / "
          << s.requests << " | " << p90_text(s.ttft_ms) << " | " << p90_text(s.tpot_ms) << " | "
          << p90_text(s.e2el_ms) << " |\n";
      }
  }

  if (slo) {
    m << "\n## SLO attainment vs SLO scale\n\n| endpoint | rate (req/s) |";
    for (double s : r.scales) m << " x" << rate_label(s) << " |";
    m << "\n|---|---|";
    for (size_t i = 0; i < r.scales.size(); ++i) m << "---|";
    m << "\n";
    for (const auto& run : r.runs) {
      m << "| " << run.label << " | " << rate_label(run.rate) << " |";
      for (const auto& [sc, a] : run.scale_curve) m << " " << fmt(100 * a, 1) << "% |";
      m << "\n";
    }
  }

  std::vector<std::string> notes = r.notes;
  for (const auto& e : r.endpoints)
    for (const auto& n : e.notes) notes.push_back(e.label + ": " + n);
  for (const auto& run : r.runs)
    if (run.summary.output_len_mismatch)
      notes.push_back(run.label + " @ " + rate_label(run.rate) + ": " +
                      std::to_string(run.summary.output_len_mismatch) +
                      " completed requests returned a different number of tokens than max_tokens "
                      "(ignore_eos not honoured?)");
  if (!notes.empty()) {
    m << "\n## Notes\n\n";
    for (const auto& n : notes) m << "- " << n << "\n";
  }
  bool any_png = false;
  for (const auto& f : r.files)
    if (fs::path(f).extension() == ".png") {
      if (!any_png) m << "\n## Plots\n\n";
      any_png = true;
      const std::string rel = fs::path(f).lexically_relative(o.output_dir).string();
      m << "![" << fs::path(f).stem().string() << "](" << rel << ")\n";
    }
  return m.str();
}

std::string run_json(const RunReport& run) {
  json reqs = json::array();
  for (const auto& rec : run.records) {
    const RequestMetrics mt = request_metrics(rec);
    json j = {{"index", rec.index},           {"ok", rec.ok},
              {"input_len", rec.input_len},   {"prompt_tokens", mt.prompt_tokens},
              {"max_tokens", rec.max_tokens}, {"output_tokens", mt.output_tokens},
              {"arrival_s", rec.arrival_s},   {"start_s", rec.start_s},
              {"end_s", rec.end_s},           {"e2el_ms", mt.e2el_s * 1000}};
    if (!rec.chunk_s.empty()) j["ttft_ms"] = mt.ttft_s * 1000;
    if (mt.tpot_s) j["tpot_ms"] = *mt.tpot_s * 1000;
    json itl = json::array();
    for (double g : mt.itl_s) itl.push_back(g * 1000);
    j["itl_ms"] = std::move(itl);
    j["text_chunks"] = rec.chunk_s.size();
    if (rec.usage_completion_tokens) j["usage_completion_tokens"] = *rec.usage_completion_tokens;
    if (rec.usage_prompt_tokens) j["usage_prompt_tokens"] = *rec.usage_prompt_tokens;
    if (!rec.ok)
      j["error"] = {{"kind", rec.error_kind},
                    {"http_status", rec.http_status},
                    {"message", rec.error_message}};
    reqs.push_back(std::move(j));
  }
  json j = {{"endpoint", run.label},
            {"url", run.url},
            {"model", run.model},
            {"request_rate", rate_json(run.rate)},
            {"probe", run.probe},
            {"summary", summary_to_json(run.summary)},
            {"slo_scale_curve", curve_json(run.scale_curve)},
            {"requests", std::move(reqs)}};
  return j.dump(1, ' ', false, json::error_handler_t::replace);
}

std::string summary_json(const ServeReport& r) {
  const ServeOptions& o = r.options;
  json rates = json::array();
  for (double x : o.rates) rates.push_back(rate_json(x));
  json cfg = {{"api", api_name(o.api)},
              {"dataset", o.dataset.describe()},
              {"num_prompts", r.lengths.size()},
              {"seed", o.seed},
              {"max_model_len", r.max_model_len},
              {"request_rates", rates},
              {"burstiness", o.burstiness},
              {"max_concurrency", o.max_concurrency},
              {"single_sequence", o.single_sequence},
              {"slo", o.slo.given() ? json{{"ttft_ms", o.slo.ttft_ms},
                                           {"tpot_ms", o.slo.tpot_ms},
                                           {"preset", o.slo_name}}
                                    : json(nullptr)},
              {"slo_scale", o.slo_scale},
              {"slo_scales", r.scales},
              {"attainment_target", o.attainment_target},
              {"slo_definition", slo_definition_name(o.slo_definition)},
              {"goodput_search", o.goodput_search.enabled
                                     ? json{{"min_rate", o.goodput_search.min_rate},
                                            {"max_rate", o.goodput_search.max_rate},
                                            {"resolution", o.goodput_search.resolution}}
                                     : json(nullptr)},
              {"request_timeout_s", o.timeout_s},
              {"warmup", o.warmup}};
  json eps = json::array();
  for (const auto& e : r.endpoints) {
    json runs = json::array();
    for (const auto& run : r.runs) {
      if (run.label != e.label) continue;
      runs.push_back({{"request_rate", rate_json(run.rate)},
                      {"probe", run.probe},
                      {"summary", summary_to_json(run.summary)},
                      {"slo_scale_curve", curve_json(run.scale_curve)}});
    }
    eps.push_back({{"label", e.label},
                   {"url", e.url},
                   {"model", e.model},
                   {"tokenizer", e.tokenizer},
                   {"server_max_model_len",
                    e.server_max_model_len ? json(*e.server_max_model_len) : json(nullptr)},
                   {"prompts_exact", e.prompts_exact},
                   {"prompts", e.prompts},
                   {"goodput_rate", optional_rate_json(e.goodput_rate)},
                   {"goodput_miss_rate", optional_rate_json(e.goodput_miss_rate)},
                   {"notes", e.notes},
                   {"p90_vs_rate", p90_vs_rate_json(r, e.label)},
                   {"runs", std::move(runs)}});
  }
  json j = {{"config", cfg}, {"endpoints", std::move(eps)}, {"notes", r.notes}};
  return j.dump(1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> write_report_files(const ServeReport& report, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create output folder " + dir + ": " + ec.message());
  std::vector<std::string> files;
  for (const auto& run : report.runs) {
    const fs::path p =
        fs::path(dir) / (file_stem(run.label) + "_rate-" + rate_file_label(run.rate) + ".json");
    write_file(p, run_json(run));
    files.push_back(p.string());
  }
  const fs::path s = fs::path(dir) / "summary.json";
  write_file(s, summary_json(report));
  files.push_back(s.string());
  const fs::path md = fs::path(dir) / "report.md";
  write_file(md, markdown_report(report));
  files.push_back(md.string());
  return files;
}

}  // namespace sandwich::bench
