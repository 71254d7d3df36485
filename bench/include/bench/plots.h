#pragma once
// Pictures of a comparison, drawn by gnuplot (pngcairo, else png): SLO attainment vs request
// rate, P90 TTFT and P90 TPOT vs request rate (the paper's, SLO as a horizontal line),
// attainment vs SLO scale, TTFT, TPOT and E2E latency CDFs (one picture per rate). Data and scripts
// stay next to the PNGs (plots/*.dat, *.gp) so a person can restyle them.
#include <iosfwd>
#include <string>
#include <vector>

#include "bench/serve.h"

namespace sandwich::bench {

// One picture as gnuplot gets it: the script (<name>.gp, which draws <name>.png) and its data
// (<name>.dat).
struct PlotScript {
  std::string name, script, data;
};

// Every picture of the report, as scripts; nothing is drawn (gnuplot is not needed). The
// *_vs_rate pictures (one line per endpoint) show runs sent all at once as their own marker
// right of the rates; their P90s are over completed requests, as the Results table's. CDFs
// span their data, with the SLO line drawn, or named at the edge when it lies far off the
// data (E2E has no SLO).
std::vector<PlotScript> plot_scripts(const ServeReport& report);

// The gnuplot command ($SANDWICH_GNUPLOT, else "gnuplot") if it runs, else "".
std::string find_gnuplot();

// The start of every picture's script: pngcairo where the gnuplot build has it, else png;
// 960x600, labels taken literally.
std::string gnuplot_terminal();

// Writes p's script and data into dir (created) and draws <dir>/<name>.png with find_gnuplot()'s
// gnuplot; returns the PNG's path. Without gnuplot, or when it fails, the script and data stay
// for later, a warning goes to log and "" is returned; never throws for a missing plotter.
std::string draw_plot(const PlotScript& p, const std::string& dir, std::ostream& log);

// Writes the PNGs under dir/plots and returns their paths. Without gnuplot, or when it fails,
// warns on log and returns what was drawn; never throws for a missing plotter.
std::vector<std::string> write_plots(const ServeReport& report, const std::string& dir,
                                     std::ostream& log);

}  // namespace sandwich::bench
