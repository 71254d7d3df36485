// The serving benchmark's metrics, computed exactly from recorded timestamps. Times are binary
// fractions (multiples of 1/8 s) so that every expected value is exact in floating point.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/metrics.h"

namespace sandwich::bench {
namespace {

TEST(BenchPercentile, MatchesNumpyLinearInterpolation) {
  // numpy.percentile(range(1, 11), [50, 90, 99]) == [5.5, 9.1, 9.91]
  std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 5.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 9.1);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 9.91);
  // numpy.percentile([15, 20, 35, 40, 50], 40) == 29.0; 0 and 100 are min and max
  EXPECT_DOUBLE_EQ(percentile({15, 20, 35, 40, 50}, 40), 29.0);
  EXPECT_DOUBLE_EQ(percentile({15, 20, 35, 40, 50}, 0), 15);
  EXPECT_DOUBLE_EQ(percentile({15, 20, 35, 40, 50}, 100), 50);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(BenchPercentile, FailuresAsInfinityReachOnlyTheTail) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(percentile({1, 2, inf}, 50), 2);  // h = 1 exactly: no 0 * inf
  EXPECT_EQ(percentile({1, 2, inf}, 51), inf);
  EXPECT_EQ(percentile({inf, 1, 2, 3}, 100), inf);
  EXPECT_DOUBLE_EQ(percentile({inf, 1, 2, 3}, 0), 1);
  EXPECT_EQ(percentile({inf, inf}, 50), inf);
}

TEST(BenchDistribution, MeanMedianTailsAndEmpty) {
  const Distribution d = distribution({125, 500, 250, 125});
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.mean, 250);
  EXPECT_DOUBLE_EQ(d.median, 187.5);
  EXPECT_DOUBLE_EQ(d.p90, 425);    // h = 2.7: 250 + 0.7 * 250
  EXPECT_DOUBLE_EQ(d.p99, 492.5);  // h = 2.97
  EXPECT_DOUBLE_EQ(d.min, 125);
  EXPECT_DOUBLE_EQ(d.max, 500);
  const Distribution e = distribution({});
  EXPECT_EQ(e.count, 0u);
  EXPECT_EQ(e.mean, 0);
  EXPECT_EQ(e.p99, 0);
}

RequestRecord rec(double start, std::vector<double> chunks, double end,
                  std::optional<int> usage_out, std::optional<int> usage_prompt = std::nullopt) {
  RequestRecord r;
  r.ok = true;
  r.start_s = start;
  r.chunk_s = std::move(chunks);
  r.end_s = end;
  r.usage_completion_tokens = usage_out;
  r.usage_prompt_tokens = usage_prompt;
  return r;
}

TEST(BenchRequestMetrics, TtftTpotItlE2eFromTimestamps) {
  const RequestMetrics m = request_metrics(rec(1.0, {1.25, 1.375, 1.5, 1.625}, 1.75, 4, 9));
  EXPECT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.ttft_s, 0.25);
  EXPECT_DOUBLE_EQ(m.e2el_s, 0.75);
  ASSERT_TRUE(m.tpot_s);
  EXPECT_DOUBLE_EQ(*m.tpot_s, 0.5 / 3);  // (E2E - TTFT) / (4 - 1)
  EXPECT_EQ(m.itl_s, (std::vector<double>{0.125, 0.125, 0.125}));
  EXPECT_EQ(m.output_tokens, 4);
  EXPECT_EQ(m.prompt_tokens, 9);
}

TEST(BenchRequestMetrics, CountsFromUsageElseChunksAndBuiltPrompt) {
  // Two tokens per chunk: the usage block says 6 while 3 chunks arrived.
  RequestRecord r = rec(0, {0.5, 0.625, 0.75}, 0.75, 6);
  r.prompt_tokens = 12;
  RequestMetrics m = request_metrics(r);
  EXPECT_EQ(m.output_tokens, 6);
  EXPECT_DOUBLE_EQ(*m.tpot_s, 0.25 / 5);
  EXPECT_EQ(m.itl_s.size(), 2u);
  EXPECT_EQ(m.prompt_tokens, 12);  // no usage block: what the client built
  r.usage_completion_tokens.reset();
  m = request_metrics(r);
  EXPECT_EQ(m.output_tokens, 3);
  EXPECT_DOUBLE_EQ(*m.tpot_s, 0.25 / 2);
}

TEST(BenchRequestMetrics, OneTokenHasNoTpotAndMeetsItsTarget) {
  const RequestMetrics m = request_metrics(rec(0, {0.125}, 0.125, 1));
  EXPECT_FALSE(m.tpot_s);
  EXPECT_TRUE(m.itl_s.empty());
  EXPECT_TRUE(meets_slo(m, {200, 1}, 1.0));
  EXPECT_FALSE(meets_slo(m, {100, 1}, 1.0));
}

TEST(BenchSlo, BoundsAreInclusiveScaledAndFailuresNeverMeet) {
  const RequestMetrics m =
      request_metrics(rec(0, {0.25, 0.375, 0.5}, 0.5, 3));  // TTFT 250, TPOT 125
  EXPECT_TRUE(meets_slo(m, {250, 125}, 1.0));
  EXPECT_FALSE(meets_slo(m, {249, 125}, 1.0));
  EXPECT_FALSE(meets_slo(m, {250, 124}, 1.0));
  EXPECT_TRUE(meets_slo(m, {125, 62.5}, 2.0));
  EXPECT_FALSE(meets_slo(m, {250, 125}, 0.5));
  RequestRecord failed = rec(0, {0.125}, 0.125, 1);
  failed.ok = false;
  EXPECT_FALSE(meets_slo(request_metrics(failed), {1e9, 1e9}, 1.0));
}

// Five requests: two meet the SLO (300 / 150 ms), one misses TTFT, one misses TPOT, one failed.
std::vector<RequestRecord> scenario() {
  std::vector<RequestRecord> v;
  v.push_back(rec(0.0, {0.25, 0.375, 0.5}, 0.5, 3, 10));    // TTFT 250, TPOT 125: good
  v.push_back(rec(0.5, {1.0, 1.125}, 1.25, std::nullopt));  // TTFT 500: miss; 2 chunks
  v.back().prompt_tokens = 12;
  v.push_back(rec(1.0, {1.125}, 1.125, 1, 7));  // one token: good
  RequestRecord failed;
  failed.start_s = failed.end_s = 1.5;
  failed.error_kind = "connect";
  v.push_back(failed);
  v.push_back(rec(0.25, {0.375, 0.5, 0.625, 1.0}, 2.0, 4, 20));  // TPOT 541.67: miss
  const int max_tokens[] = {3, 3, 1, 5, 4};                      // #1 asked for 3, got 2
  const int input_len[] = {10, 12, 7, 5, 19};  // #4 asked for 19, the server counted 20
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].index = static_cast<int>(i);
    v[i].max_tokens = max_tokens[i];
    v[i].input_len = input_len[i];
  }
  return v;
}

TEST(BenchSummary, EveryFigureOfAMixedRun) {
  const Summary s = summarize(scenario(), {300, 150}, 1.0);
  EXPECT_EQ(s.requests, 5);
  EXPECT_EQ(s.completed, 4);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.errors, (std::map<std::string, int>{{"connect", 1}}));
  EXPECT_DOUBLE_EQ(s.duration_s, 2.0);
  EXPECT_EQ(s.total_input_tokens, 10 + 12 + 7 + 20);
  EXPECT_EQ(s.total_output_tokens, 3 + 2 + 1 + 4);
  EXPECT_DOUBLE_EQ(s.request_throughput, 2.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 5.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 29.5);

  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 250);
  EXPECT_DOUBLE_EQ(s.ttft_ms.median, 187.5);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p90, 425);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p99, 492.5);

  const double tpot4 = 1625.0 / 3;  // (1750 - 125) / 3
  EXPECT_EQ(s.tpot_ms.count, 3u);   // the one-token request has no TPOT
  EXPECT_DOUBLE_EQ(s.tpot_ms.mean, (125 + 250 + tpot4) / 3);
  EXPECT_DOUBLE_EQ(s.tpot_ms.median, 250);
  EXPECT_DOUBLE_EQ(s.tpot_ms.p90, 250 + 0.8 * (tpot4 - 250));
  EXPECT_DOUBLE_EQ(s.tpot_ms.max, tpot4);

  EXPECT_EQ(s.itl_ms.count, 6u);  // 2 + 1 + 0 + 3 gaps
  EXPECT_DOUBLE_EQ(s.itl_ms.mean, 1000.0 / 6);
  EXPECT_DOUBLE_EQ(s.itl_ms.median, 125);
  EXPECT_DOUBLE_EQ(s.itl_ms.p90, 250);    // h = 4.5 between 125 and 375
  EXPECT_DOUBLE_EQ(s.itl_ms.p99, 362.5);  // h = 4.95

  EXPECT_DOUBLE_EQ(s.e2el_ms.mean, (500 + 750 + 125 + 1750) / 4.0);
  EXPECT_DOUBLE_EQ(s.e2el_ms.median, 625);
  EXPECT_DOUBLE_EQ(s.output_tokens.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.prompt_tokens.max, 20);

  EXPECT_EQ(s.good, 2);
  EXPECT_DOUBLE_EQ(s.attainment, 0.4);         // failures count as misses
  EXPECT_DOUBLE_EQ(s.good_request_rate, 1.0);  // 2 good / 2 s
  EXPECT_DOUBLE_EQ(s.ttft_attainment, 0.6);    // 250, 125, 125 of 250, 500, 125, fail, 125
  EXPECT_DOUBLE_EQ(s.tpot_attainment, 0.4);    // 125 and the one-token request
  // The paper's form: P90 over all five, the failure as +inf. TTFT sorted 125, 125, 250, 500,
  // inf: h = 3.6 reaches the failure.
  EXPECT_EQ(s.percentile_slo.percentile, 90);
  EXPECT_TRUE(std::isinf(s.percentile_slo.ttft_ms));
  EXPECT_FALSE(s.percentile_slo.met);
  EXPECT_EQ(s.output_len_mismatch, 1);
  EXPECT_EQ(s.prompt_len_mismatch, 1);
}

// Per request, 40% meet both limits; as percentiles at P50 both are met: the two definitions
// differ, and the report gives both.
TEST(BenchSummary, PercentileSloIsThePapersDefinition) {
  const Summary s = summarize(scenario(), {300, 400}, 1.0, 0.5);
  EXPECT_EQ(s.percentile_slo.percentile, 50);
  EXPECT_DOUBLE_EQ(s.percentile_slo.ttft_ms, 250);  // 125, 125, 250, 500, inf: h = 2
  // TPOT: 125, 250, 541.67, inf (the one-token request has none): h = 1.5
  EXPECT_DOUBLE_EQ(s.percentile_slo.tpot_ms, 250 + 0.5 * (1625.0 / 3 - 250));
  EXPECT_TRUE(s.percentile_slo.met);
  EXPECT_DOUBLE_EQ(s.attainment, 0.4);
  EXPECT_TRUE(run_meets_slo(s, SloDefinition::Percentile, 0.5));
  EXPECT_FALSE(run_meets_slo(s, SloDefinition::PerRequest, 0.5));
  EXPECT_FALSE(summarize(scenario(), {300, 390}, 1.0, 0.5).percentile_slo.met);
  EXPECT_FALSE(summarize(scenario(), {240, 400}, 1.0, 0.5).percentile_slo.met);
  EXPECT_TRUE(summarize(scenario(), {240, 400}, 2.0, 0.5).percentile_slo.met);  // scaled
  EXPECT_EQ(parse_slo_definition("percentile"), SloDefinition::Percentile);
  EXPECT_STREQ(slo_definition_name(SloDefinition::PerRequest), "per-request");
  EXPECT_THROW(parse_slo_definition("p90"), std::invalid_argument);
}

TEST(BenchSummary, AttainmentCurveOverSloScales) {
  const auto v = scenario();
  EXPECT_DOUBLE_EQ(attainment(v, {300, 150}, 1.0), 0.4);
  EXPECT_DOUBLE_EQ(attainment(v, {300, 150}, 2.0), 0.6);  // #1 now meets 600 / 300
  EXPECT_DOUBLE_EQ(attainment(v, {300, 150}, 0.5), 0.2);  // only the one-token request
  EXPECT_DOUBLE_EQ(attainment(v, {300, 150}, 4.0), 0.8);  // all but the failure
  EXPECT_DOUBLE_EQ(attainment({}, {300, 150}, 1.0), 0.0);
}

TEST(BenchSummary, AllFailedRunIsReportedNotCrashed) {
  std::vector<RequestRecord> v(3);
  for (auto& r : v) r.error_kind = "connect";
  v[2].error_kind = "timeout";
  v[2].end_s = 0.5;
  const Summary s = summarize(v, {100, 10}, 1.0);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.errors.at("connect"), 2);
  EXPECT_EQ(s.errors.at("timeout"), 1);
  EXPECT_EQ(s.ttft_ms.count, 0u);
  EXPECT_DOUBLE_EQ(s.attainment, 0);
  EXPECT_DOUBLE_EQ(s.good_request_rate, 0);
  EXPECT_FALSE(s.percentile_slo.met);
  EXPECT_DOUBLE_EQ(s.request_throughput, 0);
}

TEST(BenchGoodput, HighestRateWhoseLowerRatesAllMeetTheTarget) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(goodput_rate({{2, 0.85}, {0.5, 0.95}, {1, 0.9}, {4, 0.95}}, 0.9),
            1.0);  // 4 passes but 2 fails
  EXPECT_EQ(goodput_rate({{1, 0.5}, {2, 0.95}}, 0.9), std::nullopt);
  EXPECT_EQ(goodput_rate({{inf, 0.99}, {1, 0.95}}, 0.9), inf);
  EXPECT_EQ(goodput_rate({{0.25, 1.0}, {0.5, 1.0}}, 0.9), 0.5);
  EXPECT_EQ(goodput_rate({}, 0.9), std::nullopt);
  EXPECT_EQ(goodput_rate(std::vector<std::pair<double, bool>>{{3, true}, {1, true}, {2, false}}),
            1.0);
}

}  // namespace
}  // namespace sandwich::bench
