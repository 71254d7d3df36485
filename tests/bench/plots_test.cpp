// The pictures as gnuplot scripts, read without gnuplot: runs sent all at once keep their own
// marker on the attainment-vs-rate picture, and CDFs span their data with the SLO always marked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "bench/plots.h"
#include "report_fixture.h"
#include "test_data.h"

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

// The paper's P90 TTFT / TPOT against the rate: one line per endpoint over the finite rates,
// all at once as its own marker, the SLO a horizontal line.
TEST(BenchPlots, P90AgainstRatePerEndpointWithTheSloLine) {
  ServeReport r = test::hand_made_report();
  r.options.slo = {6, 3};  // TTFT P90s 4.7 ms, TPOT P90s 1.9 ms: both SLOs close above
  bench::EndpointReport other = r.endpoints[0];
  other.label = "peer";
  r.endpoints.push_back(other);
  for (double rate : {1.0, 2.0}) {
    RunReport run = test::run_at(
        rate, {test::timed_record(0, 3, 2, 4), test::timed_record(1, 4 * rate, 2.5, 4)}, r.options);
    run.label = "peer";
    r.runs.push_back(run);
  }
  const auto plots = plot_scripts(r);
  const PlotScript& ttft = find_plot(plots, "p90_TTFT_vs_rate");
  EXPECT_TRUE(has(ttft.script, "set title 'P90 TTFT vs request rate'")) << ttft.script;
  EXPECT_TRUE(has(ttft.script, "set ylabel 'P90 time to first token (ms)'")) << ttft.script;
  EXPECT_TRUE(has(ttft.script, "set arrow from graph 0, first 6 to graph 1, first 6"))
      << ttft.script;
  EXPECT_TRUE(has(ttft.script, "set label 'SLO 6 ms'")) << ttft.script;
  EXPECT_TRUE(has(ttft.script, "set xtics add ('all at once' 2.5)")) << ttft.script;
  EXPECT_TRUE(has(ttft.script, "title 'peer'")) << ttft.script;
  // ep: 4.7 ms at every rate (all at once at x 2.5); peer: 3.9 and 7.5 ms (3 + 0.9 * (4r - 3)).
  EXPECT_EQ(ttft.data,
            "# ep\n1 4.7\n2 4.7\n\n\n# ep, all at once\n2.5 4.7\n\n\n"
            "# peer\n1 3.9\n2 7.5\n\n\n");
  const PlotScript& tpot = find_plot(plots, "p90_TPOT_vs_rate");
  EXPECT_TRUE(has(tpot.script, "set arrow from graph 0, first 3 to graph 1, first 3"))
      << tpot.script;
  EXPECT_TRUE(has(tpot.data, "# peer\n1 2.45\n2 2.45\n")) << tpot.data;

  // An SLO far above the data is named at the top, and the axis stays on the data.
  r.options.slo = {2500, 100};
  const auto far_plots = plot_scripts(r);  // find_plot's reference lives as long as these
  const PlotScript& far = find_plot(far_plots, "p90_TTFT_vs_rate");
  EXPECT_TRUE(has(far.script, "set label 'SLO 2.5 s (above)'")) << far.script;
  EXPECT_FALSE(has(far.script, "first 2500")) << far.script;
  // Without an SLO: the pictures all the same, no SLO anywhere.
  r.options.slo = {};
  const auto plain_plots = plot_scripts(r);
  const PlotScript& none = find_plot(plain_plots, "p90_TPOT_vs_rate");
  EXPECT_FALSE(has(none.script, "SLO")) << none.script;
}

TEST(BenchPlots, E2eLatencyCdfPerRateOneLinePerEndpoint) {
  const auto plots = plot_scripts(test::hand_made_report());
  const PlotScript& p = find_plot(plots, "e2el_cdf_rate-1");
  EXPECT_TRUE(has(p.script, "set title 'E2E latency CDF, 1 req/s'")) << p.script;
  EXPECT_TRUE(has(p.script, "with steps title 'ep'")) << p.script;
  // E2E of 2 + 3 x 1 = 5 ms and 5 + 3 x 2 = 11 ms: the CDF steps at both, the axis from 0.
  EXPECT_EQ(p.data, "# ep\n5 0\n5 50\n11 100\n\n\n");
  EXPECT_TRUE(has(p.script, "set xrange [0:11.3]")) << p.script;
  EXPECT_FALSE(has(p.script, "SLO")) << p.script;
}

TEST(BenchPlots, CdfWithoutDataIsNotDrawn) {
  ServeReport r = test::hand_made_report();
  RequestRecord failed;
  failed.error_kind = "connect";
  for (auto& run : r.runs) run.records = {failed};
  const auto plots = plot_scripts(r);
  for (const auto& p : plots) EXPECT_EQ(p.name.find("cdf"), std::string::npos) << p.name;
}

// One picture drawn alone (bench_kernels --sweep draws its own this way): the PNG with gnuplot;
// without it the script and data stay for later and a warning says so.
TEST(BenchPlots, DrawPlotDrawsOrLeavesTheScript) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("sandwich_draw_plot_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const PlotScript p = find_plot(plot_scripts(test::hand_made_report()), "e2el_cdf_rate-2");
  {
    test::ScopedEnv no_plotter("SANDWICH_GNUPLOT", "/nonexistent/gnuplot");
    std::ostringstream log;
    EXPECT_EQ(draw_plot(p, (dir / "none").string(), log), "");
    EXPECT_TRUE(has(log.str(), "gnuplot not found")) << log.str();
    EXPECT_TRUE(fs::exists(dir / "none" / "e2el_cdf_rate-2.gp"));
    EXPECT_TRUE(fs::exists(dir / "none" / "e2el_cdf_rate-2.dat"));
  }
  if (!find_gnuplot().empty()) {
    std::ostringstream log;
    const std::string png = draw_plot(p, dir.string(), log);
    EXPECT_EQ(png, (dir / "e2el_cdf_rate-2.png").string()) << log.str();
    EXPECT_TRUE(fs::exists(png) && fs::file_size(png) > 1000) << log.str();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sandwich::bench
