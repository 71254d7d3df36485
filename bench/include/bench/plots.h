#pragma once
// Pictures of a comparison, drawn by gnuplot (pngcairo, else png): SLO attainment vs request
// rate, attainment vs SLO scale, TTFT and TPOT CDFs. Data and scripts stay next to the PNGs
// (plots/*.dat, *.gp) so a person can restyle them.
#include <iosfwd>
#include <string>
#include <vector>

#include "bench/serve.h"

namespace sandwich::bench {

// The gnuplot command ($SANDWICH_GNUPLOT, else "gnuplot") if it runs, else "".
std::string find_gnuplot();

// Writes the PNGs under dir/plots and returns their paths. Without gnuplot, or when it fails,
// warns on log and returns what was drawn; never throws for a missing plotter.
std::vector<std::string> write_plots(const ServeReport& report, const std::string& dir,
                                     std::ostream& log);

}  // namespace sandwich::bench
