// The report's words and keys: "all at once" for an unlimited rate, both SLO definitions, and
// one meaning per name (goodput is a rate meeting the SLO; the good request rate is per run).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/report.h"
#include "report_fixture.h"

namespace sandwich::bench {
namespace {

using json = nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The value of the summary row that starts with name ("" when there is none).
std::string row_value(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name);
  if (at == std::string::npos) return "";
  const size_t from = text.find_first_not_of(' ', at + 1 + name.size());
  return text.substr(from, text.find('\n', from) - from);
}

TEST(BenchReportLabels, AnUnlimitedRateIsAllAtOnce) {
  EXPECT_EQ(rate_label(kInf), "all at once");
  EXPECT_EQ(rate_label(0.5), "0.5");
  EXPECT_EQ(rate_with_unit(kInf), "all at once");
  EXPECT_EQ(rate_with_unit(2), "2 req/s");
  EXPECT_EQ(rate_file_label(kInf), "inf");  // file names and JSON keep a token
  EXPECT_EQ(ms_label(200), "200 ms");
  EXPECT_EQ(ms_label(2500), "2.5 s");
}

TEST(BenchReportText, RunSummaryGivesBothSloFormsAndTheGoodRequestRate) {
  const ServeReport r = test::hand_made_report();
  const std::string text = format_run_summary(r.runs[2], 0.9);
  EXPECT_EQ(row_value(text, "Request rate (req/s):"), "all at once") << text;
  EXPECT_EQ(row_value(text, "SLO attainment, per request (%):"), "100.00") << text;
  EXPECT_EQ(row_value(text, "TTFT / TPOT limit met (%):"), "100.00 / 100.00") << text;
  EXPECT_EQ(row_value(text, "P90 TTFT / P90 TPOT (ms):"), "4.70 / 1.90") << text;
  EXPECT_EQ(row_value(text, "P90 TTFT <= 200 ms and P90 TPOT <= 100 ms:"), "met") << text;
  EXPECT_NE(row_value(text, "Good request rate (req/s):"), "") << text;
  EXPECT_FALSE(has(text, "Goodput")) << text;

  // A failure makes the P90 infinite, and the run misses in the paper's form.
  RequestRecord failed;
  failed.error_kind = "connect";
  std::vector<RequestRecord> recs(9, test::timed_record(0, 2, 1, 4));
  recs.push_back(failed);
  const RunReport run = test::run_at(1, recs, r.options);
  const std::string missed = format_run_summary(run, 0.9);
  EXPECT_EQ(row_value(missed, "P90 TTFT / P90 TPOT (ms):"), "inf (failures) / inf (failures)")
      << missed;
  EXPECT_EQ(row_value(missed, "P90 TTFT <= 200 ms and P90 TPOT <= 100 ms:"), "missed") << missed;
  // Per request, 9 of 10 meet both limits: the target is met.
  EXPECT_EQ(row_value(missed, "SLO attainment, per request (%):"), "90.00") << missed;
}

TEST(BenchReportMarkdown, AllAtOnceRowsAndGoodputAsARate) {
  ServeReport r = test::hand_made_report();
  r.endpoints[0].goodput_miss_rate = kInf;
  const std::string md = markdown_report(r);
  EXPECT_TRUE(has(md, "| ep | all at once | 2 / 2 |")) << md;
  EXPECT_FALSE(has(md, "| inf |")) << md;
  EXPECT_TRUE(has(md, "| P90 SLO | good req/s |")) << md;
  EXPECT_TRUE(has(md, "| 100.0% | met |")) << md;
  EXPECT_TRUE(has(md, "| ep | 2 (misses at all at once) |")) << md;
  EXPECT_TRUE(has(md, "not goodput")) << md;

  r.options.slo_definition = SloDefinition::Percentile;
  r.endpoints[0].goodput_rate = kInf;
  r.endpoints[0].goodput_miss_rate.reset();
  const std::string p90 = markdown_report(r);
  EXPECT_TRUE(has(p90, "P90 TTFT and P90 TPOT stay within the targets")) << p90;
  EXPECT_TRUE(has(p90, "| ep | >= all at once |")) << p90;
}

TEST(BenchReportMarkdown, GoodputSearchStatesItsBracketAndResolution) {
  ServeReport r = test::hand_made_report();
  r.options.goodput_search = {true, 0.5, 8, 0.25};
  r.endpoints[0].goodput_rate = 3.5;
  r.endpoints[0].goodput_miss_rate = 3.75;
  for (auto& run : r.runs) run.probe = 1;
  const std::string md = markdown_report(r);
  EXPECT_TRUE(has(md,
                  "found by bisection between 0.5 req/s and 8 req/s to a resolution of "
                  "0.25 req/s"))
      << md;
  EXPECT_TRUE(has(md, "| ep | 3.5 (misses at 3.75) | 3 |")) << md;
  r.endpoints[0].goodput_rate.reset();
  r.endpoints[0].goodput_miss_rate = 0.5;
  EXPECT_TRUE(has(markdown_report(r), "| ep | < 0.5 |")) << markdown_report(r);
  r.endpoints[0].goodput_rate = 8;
  r.endpoints[0].goodput_miss_rate.reset();
  EXPECT_TRUE(has(markdown_report(r), "| ep | >= 8 |")) << markdown_report(r);
}

// The data of the P90-vs-rate pictures: a Markdown table per endpoint and rate, and the same
// figures in summary.json, in increasing rate with all at once last.
TEST(BenchReportP90, PerRateInMarkdownAndJson) {
  const ServeReport r = test::hand_made_report();
  const std::string md = markdown_report(r);
  EXPECT_TRUE(has(md, "## P90 latency vs request rate")) << md;
  EXPECT_TRUE(has(md, "SLO TTFT <= 200 ms, TPOT <= 100 ms")) << md;
  // TTFT 2 and 5 ms, TPOT 1 and 2 ms, E2E 5 and 11 ms.
  EXPECT_TRUE(has(md, "| ep | 1 | 2 / 2 | 4.7 | 1.9 | 10.4 |")) << md;
  EXPECT_TRUE(has(md, "| ep | all at once | 2 / 2 | 4.7 | 1.9 | 10.4 |")) << md;
  const json s = json::parse(summary_json(r));
  const json& p = s["endpoints"][0]["p90_vs_rate"];
  ASSERT_EQ(p.size(), 3u) << p;
  EXPECT_EQ(p[0]["request_rate"], 1.0);
  EXPECT_EQ(p[2]["request_rate"], "inf");
  EXPECT_NEAR(p[1]["ttft_ms"].get<double>(), 4.7, 1e-9);
  EXPECT_NEAR(p[1]["tpot_ms"].get<double>(), 1.9, 1e-9);
  EXPECT_NEAR(p[1]["e2el_ms"].get<double>(), 10.4, 1e-9);

  // A run where nothing completed has no P90s (null), and one rate alone has no such section.
  ServeReport one = r;
  RequestRecord failed;
  failed.error_kind = "connect";
  one.runs = {test::run_at(1, {failed}, r.options)};
  EXPECT_FALSE(has(markdown_report(one), "## P90 latency vs request rate"));
  const json j = json::parse(summary_json(one));
  EXPECT_TRUE(j["endpoints"][0]["p90_vs_rate"][0]["ttft_ms"].is_null());
}

TEST(BenchReportJson, RenamedKeysAndBothSloForms) {
  ServeReport r = test::hand_made_report();
  r.endpoints[0].goodput_miss_rate = kInf;
  const json s = json::parse(summary_json(r));
  const json& e = s["endpoints"][0];
  EXPECT_EQ(e["goodput_rate"], 2.0);
  EXPECT_EQ(e["goodput_miss_rate"], "inf");
  EXPECT_EQ(s["config"]["slo_definition"], "per-request");
  EXPECT_TRUE(s["config"]["goodput_search"].is_null());
  const json& sum = e["runs"][2]["summary"];
  EXPECT_EQ(e["runs"][2]["request_rate"], "inf");
  EXPECT_FALSE(sum.contains("goodput"));  // renamed: it was the good request rate
  EXPECT_TRUE(sum.contains("good_request_rate"));
  EXPECT_EQ(sum["attainment"], 1.0);
  EXPECT_EQ(sum["ttft_attainment"], 1.0);
  EXPECT_EQ(sum["percentile_slo"]["percentile"], 90.0);
  EXPECT_EQ(sum["percentile_slo"]["met"], true);
  EXPECT_NEAR(sum["percentile_slo"]["ttft_ms"].get<double>(), 4.7, 1e-9);  // 2 + 0.9 * 3

  RequestRecord failed;
  failed.error_kind = "timeout";
  const json run = json::parse(run_json(test::run_at(kInf, {failed}, r.options)));
  EXPECT_TRUE(run["summary"]["percentile_slo"]["ttft_ms"].is_null());  // infinite
  EXPECT_EQ(run["summary"]["percentile_slo"]["met"], false);
  EXPECT_EQ(run["request_rate"], "inf");
}

}  // namespace
}  // namespace sandwich::bench
