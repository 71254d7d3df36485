#include "bench/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace sandwich::bench {

RequestMetrics request_metrics(const RequestRecord& r) {
  RequestMetrics m;
  m.ok = r.ok;
  m.prompt_tokens = r.usage_prompt_tokens.value_or(r.prompt_tokens);
  m.output_tokens = r.usage_completion_tokens.value_or(static_cast<int>(r.chunk_s.size()));
  m.e2el_s = r.end_s - r.start_s;
  if (!r.chunk_s.empty()) m.ttft_s = r.chunk_s.front() - r.start_s;
  for (size_t i = 1; i < r.chunk_s.size(); ++i) m.itl_s.push_back(r.chunk_s[i] - r.chunk_s[i - 1]);
  if (m.output_tokens > 1) m.tpot_s = (m.e2el_s - m.ttft_s) / (m.output_tokens - 1);
  return m;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double h = (static_cast<double>(v.size()) - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= v.size() || h == static_cast<double>(lo) || std::isinf(v[lo])) return v[lo];
  if (std::isinf(v[lo + 1])) return v[lo + 1];
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

Distribution distribution(const std::vector<double>& v) {
  Distribution d;
  d.count = v.size();
  if (v.empty()) return d;
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  d.median = percentile(v, 50);
  d.p90 = percentile(v, 90);
  d.p99 = percentile(v, 99);
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  d.min = *lo;
  d.max = *hi;
  return d;
}

bool meets_slo(const RequestMetrics& m, const Slo& slo, double scale) {
  if (!m.ok) return false;
  const bool ttft = m.ttft_s * 1000.0 <= slo.ttft_ms * scale;
  const bool tpot = !m.tpot_s || *m.tpot_s * 1000.0 <= slo.tpot_ms * scale;
  return ttft && tpot;
}

double attainment(const std::vector<RequestRecord>& records, const Slo& slo, double scale) {
  if (records.empty()) return 0;
  int good = 0;
  for (const auto& r : records) good += meets_slo(request_metrics(r), slo, scale);
  return static_cast<double>(good) / static_cast<double>(records.size());
}

SloDefinition parse_slo_definition(const std::string& name) {
  if (name == "per-request") return SloDefinition::PerRequest;
  if (name == "percentile") return SloDefinition::Percentile;
  throw std::invalid_argument("--slo-definition must be per-request or percentile, got '" + name +
                              "'");
}

const char* slo_definition_name(SloDefinition d) {
  return d == SloDefinition::Percentile ? "percentile" : "per-request";
}

Summary summarize(const std::vector<RequestRecord>& records, const Slo& slo, double slo_scale,
                  double attainment_target) {
  Summary s;
  constexpr double kMiss = std::numeric_limits<double>::infinity();
  std::vector<double> ttft_all, tpot_all;  // failures as +inf, for the percentile form
  int ttft_met = 0, tpot_met = 0;
  s.slo = slo;
  s.slo_scale = slo_scale;
  s.requests = static_cast<int>(records.size());
  std::vector<double> ttft, tpot, itl, e2el, prompt, output;
  for (const auto& r : records) {
    s.duration_s = std::max(s.duration_s, r.end_s);
    const RequestMetrics m = request_metrics(r);
    if (!r.ok) {
      ttft_all.push_back(kMiss);
      tpot_all.push_back(kMiss);
      ++s.failed;
      ++s.errors[r.error_kind.empty() ? "unknown" : r.error_kind];
      continue;
    }
    ++s.completed;
    s.total_input_tokens += m.prompt_tokens;
    s.total_output_tokens += m.output_tokens;
    ttft.push_back(m.ttft_s * 1000.0);
    ttft_all.push_back(ttft.back());
    ttft_met += ttft.back() <= slo.ttft_ms * slo_scale;
    if (m.tpot_s) {
      tpot.push_back(*m.tpot_s * 1000.0);
      tpot_all.push_back(tpot.back());
    }
    tpot_met += !m.tpot_s || *m.tpot_s * 1000.0 <= slo.tpot_ms * slo_scale;
    for (double g : m.itl_s) itl.push_back(g * 1000.0);
    e2el.push_back(m.e2el_s * 1000.0);
    prompt.push_back(m.prompt_tokens);
    output.push_back(m.output_tokens);
    s.good += meets_slo(m, slo, slo_scale);
    s.output_len_mismatch += m.output_tokens != r.max_tokens;
    s.prompt_len_mismatch += m.prompt_tokens != r.input_len;
  }
  s.ttft_ms = distribution(ttft);
  s.tpot_ms = distribution(tpot);
  s.itl_ms = distribution(itl);
  s.e2el_ms = distribution(e2el);
  s.prompt_tokens = distribution(prompt);
  s.output_tokens = distribution(output);
  if (s.requests > 0) {
    s.attainment = static_cast<double>(s.good) / s.requests;
    s.ttft_attainment = static_cast<double>(ttft_met) / s.requests;
    s.tpot_attainment = static_cast<double>(tpot_met) / s.requests;
  }
  PercentileSlo& ps = s.percentile_slo;
  ps.percentile = std::round(100 * attainment_target * 1e6) / 1e6;  // 90, not 90.00000000000001
  ps.ttft_ms = percentile(ttft_all, ps.percentile);
  ps.tpot_ms = percentile(tpot_all, ps.percentile);
  ps.met = s.requests > 0 && ps.ttft_ms <= slo.ttft_ms * slo_scale &&
           ps.tpot_ms <= slo.tpot_ms * slo_scale;
  if (s.duration_s > 0) {
    s.request_throughput = s.completed / s.duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / s.duration_s;
    s.total_token_throughput =
        static_cast<double>(s.total_input_tokens + s.total_output_tokens) / s.duration_s;
    s.good_request_rate = s.good / s.duration_s;
  }
  return s;
}

bool run_meets_slo(const Summary& s, SloDefinition definition, double target) {
  return definition == SloDefinition::Percentile ? s.percentile_slo.met : s.attainment >= target;
}

std::optional<double> goodput_rate(std::vector<std::pair<double, bool>> rate_met) {
  std::sort(rate_met.begin(), rate_met.end());
  std::optional<double> best;
  for (const auto& [rate, met] : rate_met) {
    if (!met) break;
    best = rate;
  }
  return best;
}

std::optional<double> goodput_rate(std::vector<std::pair<double, double>> rate_attainment,
                                   double target) {
  std::vector<std::pair<double, bool>> met;
  for (const auto& [rate, att] : rate_attainment) met.push_back({rate, att >= target});
  return goodput_rate(std::move(met));
}

}  // namespace sandwich::bench
