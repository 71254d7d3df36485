// The pictures as gnuplot scripts, read without gnuplot: runs sent all at once keep their own
// marker on the attainment-vs-rate picture, and CDFs span their data with the SLO always marked.
#include <gtest/gtest.h>

#include "bench/plots.h"
#include "report_fixture.h"

namespace sandwich::bench {
namespace {

const PlotScript& find_plot(const std::vector<PlotScript>& plots, const std::string& name) {
  for (const auto& p : plots)
    if (p.name == name) return p;
  static const PlotScript none;
  ADD_FAILURE() << "no plot " << name;
  return none;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(BenchPlots, AllAtOnceIsItsOwnMarkerRightOfTheRates) {
  const auto plots = plot_scripts(test::hand_made_report());
  const PlotScript& p = find_plot(plots, "attainment_vs_rate");
  // Finite rates 1 and 2 on a numbered axis that stops at 2; all at once at 2.5 under its tic.
  EXPECT_TRUE(has(p.script, "set xtics 0, 0.5, 2\n")) << p.script;
  EXPECT_TRUE(has(p.script, "set xtics add ('all at once' 2.5)")) << p.script;
  EXPECT_TRUE(has(p.script, "set xrange [0:2.7]")) << p.script;
  EXPECT_TRUE(has(p.script, "title 'ep, all at once'")) << p.script;
  EXPECT_TRUE(has(p.script, "index 1 using 1:2 with points pointtype 9")) << p.script;
  EXPECT_EQ(p.data, "# ep\n1 100\n2 100\n\n\n# ep, all at once\n2.5 100\n\n\n");
  // Per-rate pictures name the rate in words.
  const PlotScript& ttft = find_plot(plots, "ttft_cdf_rate-inf");
  EXPECT_TRUE(has(ttft.script, "TTFT CDF, all at once")) << ttft.script;
}

TEST(BenchPlots, OnlyFiniteRatesHaveNoAllAtOnceMarker) {
  ServeReport r = test::hand_made_report();
  r.runs.pop_back();
  const auto plots = plot_scripts(r);
  const PlotScript& p = find_plot(plots, "attainment_vs_rate");
  EXPECT_FALSE(has(p.script, "all at once")) << p.script;
  EXPECT_TRUE(has(p.script, "set xrange [0:2.1]")) << p.script;
}

TEST(BenchPlots, CdfSpansTheDataAndNamesAFarSloAtTheEdge) {
  // TTFTs of 2 and 5 ms against a 2.5 s SLO: the axis stays on the data.
  ServeReport r = test::hand_made_report();
  r.options.slo = {2500, 100};
  const auto plots = plot_scripts(r);
  const PlotScript& p = find_plot(plots, "ttft_cdf_rate-1");
  EXPECT_TRUE(has(p.script, "set xrange [0:5.15]")) << p.script;
  EXPECT_TRUE(has(p.script, "set label 'SLO 2.5 s ->' at graph 0.99, graph 0.06 right"))
      << p.script;
  EXPECT_FALSE(has(p.script, "set arrow from first 2500")) << p.script;
}

TEST(BenchPlots, CdfTakesInAnSloCloseToTheData) {
  ServeReport r = test::hand_made_report();
  r.options.slo = {6, 1.5};  // TTFT data 2..5 ms: 6 ms lies just right of them
  const auto plots = plot_scripts(r);
  const PlotScript& ttft = find_plot(plots, "ttft_cdf_rate-2");
  EXPECT_TRUE(has(ttft.script, "set arrow from first 6, graph 0 to first 6, graph 1"))
      << ttft.script;
  EXPECT_TRUE(has(ttft.script, "set label 'SLO 6 ms'")) << ttft.script;
  // TPOT data 1 and 2 ms; the SLO 1.5 ms lies among them: a line, the range the data's.
  const PlotScript& tpot = find_plot(plots, "tpot_cdf_rate-2");
  EXPECT_TRUE(has(tpot.script, "set xrange [0:2.05]")) << tpot.script;
  EXPECT_TRUE(has(tpot.script, "set arrow from first 1.5, graph 0")) << tpot.script;
}

TEST(BenchPlots, CdfAwayFromZeroAndAnSloFarBelowIt) {
  ServeReport r = test::hand_made_report();
  r.options.slo = {10, 100};
  for (auto& run : r.runs)
    run.records = {test::timed_record(0, 1000, 1, 2), test::timed_record(1, 1100, 1, 2)};
  const auto plots = plot_scripts(r);
  const PlotScript& p = find_plot(plots, "ttft_cdf_rate-1");
  EXPECT_TRUE(has(p.script, "set xrange [995:1105]")) << p.script;
  EXPECT_TRUE(has(p.script, "set label '<- SLO 10 ms' at graph 0.01, graph 0.94 left")) << p.script;
}

TEST(BenchPlots, CdfWithoutDataIsNotDrawn) {
  ServeReport r = test::hand_made_report();
  RequestRecord failed;
  failed.error_kind = "connect";
  for (auto& run : r.runs) run.records = {failed};
  const auto plots = plot_scripts(r);
  for (const auto& p : plots) EXPECT_EQ(p.name.find("cdf"), std::string::npos) << p.name;
}

}  // namespace
}  // namespace sandwich::bench
