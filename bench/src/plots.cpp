#include "bench/plots.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>

#include "bench/report.h"

namespace sandwich::bench {

namespace fs = std::filesystem;

namespace {

// Single-quoted for sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Single-quoted for gnuplot (a quote is doubled).
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(10);
  o << v;
  return o.str();
}

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
  std::string style;  // gnuplot "with ..." clause
};

struct Plot {
  std::string name;  // file stem
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  std::string extra;  // gnuplot commands before plot (reference lines, ranges)
};

const char* const kLineStyle = "linespoints pointtype 7 pointsize 0.8";
const char* const kStepStyle = "steps";

std::string stem_part(const std::string& s) {
  std::string out = s;
  for (auto& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return out;
}

// The script and data of a plot; empty when it has no points.
PlotScript script_of(const Plot& p) {
  std::vector<const Series*> live;
  for (const auto& s : p.series)
    if (!s.points.empty()) live.push_back(&s);
  if (live.empty()) return {};
  PlotScript out{p.name, {}, {}};
  std::ostringstream d;
  d.precision(10);
  for (const Series* s : live) {
    d << "# " << s->title << "\n";
    for (const auto& [x, y] : s->points) d << x << " " << y << "\n";
    d << "\n\n";  // gnuplot's index separator
  }
  out.data = d.str();
  std::ostringstream g;
  g << gnuplot_terminal();
  g << "set output " << gp_quote(p.name + ".png") << "\n";
  g << "set title " << gp_quote(p.title) << "\nset xlabel " << gp_quote(p.xlabel) << "\nset ylabel "
    << gp_quote(p.ylabel) << "\n";
  g << "set grid\nset key outside right top\n" << p.extra;
  g << "plot ";
  for (size_t i = 0; i < live.size(); ++i)
    g << (i ? ", \\\n     " : "") << gp_quote(p.name + ".dat") << " index " << i
      << " using 1:2 with " << live[i]->style << " title " << gp_quote(live[i]->title);
  g << "\n";
  out.script = g.str();
  return out;
}

// Writes the script and data and runs gnuplot on them; returns the PNG, or "" after a warning.
std::string draw(const PlotScript& p, const fs::path& dir, const std::string& gnuplot,
                 std::ostream& log) {
  const fs::path png = dir / (p.name + ".png");
  std::ofstream(dir / (p.name + ".dat")) << p.data;
  std::ofstream(dir / (p.name + ".gp")) << p.script;
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + gnuplot + " " +
                          shell_quote(p.name + ".gp") + " > " + shell_quote(p.name + ".log") +
                          " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::error_code ec;
  if (rc != 0 || !fs::exists(png, ec)) {
    log << "warning: gnuplot could not draw " << png.string() << " (see "
        << (dir / (p.name + ".log")).string() << ")\n";
    return {};
  }
  fs::remove(dir / (p.name + ".log"), ec);
  return png.string();
}

std::vector<std::pair<double, double>> cdf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> pts;
  if (v.empty()) return pts;
  pts.push_back({v.front(), 0.0});
  for (size_t i = 0; i < v.size(); ++i)
    pts.push_back({v[i], 100.0 * static_cast<double>(i + 1) / static_cast<double>(v.size())});
  return pts;
}

const char* const kGrey = " textcolor rgb 'gray40'";

// A dashed grey reference line from `from` to `to`, labelled at `label_at` (gnuplot positions).
std::string reference_line(const std::string& from, const std::string& to, const std::string& label,
                           const std::string& label_at) {
  return "set arrow from " + from + " to " + to + " nohead dashtype 2 linecolor rgb 'gray40'\n" +
         "set label " + gp_quote(label) + " at " + label_at + kGrey + "\n";
}

std::string vline(double x, const std::string& label) {
  const std::string at = "first " + num(x);
  return reference_line(at + ", graph 0", at + ", graph 1", label,
                        at + ", graph 0.04 offset 0.5,0");
}

std::string hline(double y, const std::string& label) {
  const std::string at = "first " + num(y);
  return reference_line("graph 0, " + at, "graph 1, " + at, label,
                        "graph 0.01, " + at + " offset 0,0.7");
}

// 1, 2 or 5 times a power of ten, near span / 5: a tic step.
double tic_step(double span) {
  const double raw = span / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

// The x span of a CDF's data: from 0 unless the data sit far from it, with a margin.
std::pair<double, double> data_span(const std::vector<double>& values) {
  const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
  const double lo_data = *min_it, hi_data = *max_it;
  const double span = std::max(hi_data - lo_data, std::max(hi_data, 1e-3) * 0.02);
  return {lo_data <= 0.6 * hi_data ? 0 : std::max(0.0, lo_data - 0.05 * span),
          hi_data + 0.05 * span};
}

// The x range of a CDF: its data, widened to take in the SLO line when it lies close; an SLO
// far off the data is named at the edge instead, so the data keep the picture.
std::string cdf_range(const std::vector<double>& values, double slo_ms) {
  if (values.empty())
    return "set xrange [0:" + num(slo_ms * 1.1) + "]\n" + vline(slo_ms, "SLO " + ms_label(slo_ms));
  auto [lo, hi] = data_span(values);
  const double width = hi - lo;
  std::string marks;
  const std::string label = "SLO " + ms_label(slo_ms);
  if (slo_ms > hi && slo_ms <= hi + 0.5 * width) {
    hi = slo_ms + 0.03 * width;
  } else if (slo_ms < lo && slo_ms >= lo - 0.5 * width) {
    lo = std::max(0.0, slo_ms - 0.03 * width);
  }
  if (slo_ms > hi)
    marks =
        "set label " + gp_quote(label + " ->") + " at graph 0.99, graph 0.06 right" + kGrey + "\n";
  else if (slo_ms < lo)
    marks =
        "set label " + gp_quote("<- " + label) + " at graph 0.01, graph 0.94 left" + kGrey + "\n";
  else
    marks = vline(slo_ms, label);
  return "set xrange [" + num(lo) + ":" + num(hi) + "]\n" + marks;
}

// The request-rate axis of the *_vs_rate pictures: finite rates on a numbered axis; runs sent
// all at once get their own place (x_inf) right of them, past a dashed separator, under a tic
// of their own.
struct RateAxis {
  double x_inf = 0;
  std::string commands;
  double x(double rate) const { return std::isinf(rate) ? x_inf : rate; }
};
RateAxis rate_axis(const ServeReport& r) {
  double max_finite = 0;
  bool any_inf = false;
  for (const auto& run : r.runs) {
    if (std::isinf(run.rate))
      any_inf = true;
    else
      max_finite = std::max(max_finite, run.rate);
  }
  const double step = tic_step(max_finite);
  RateAxis a{max_finite * 1.25, {}};
  a.commands = "set xtics 0, " + num(step) + ", " + num(max_finite) + "\n";
  if (any_inf) {
    a.commands += "set xrange [0:" + num(max_finite * 1.35) + "]\n";
    a.commands += "set xtics add ('all at once' " + num(a.x_inf) + ")\n";
    a.commands += "set arrow from first " + num(max_finite * 1.125) + ", graph 0 to first " +
                  num(max_finite * 1.125) + ", graph 1 nohead dashtype 3 linecolor rgb 'gray60'\n";
  } else {
    a.commands += "set xrange [0:" + num(max_finite * 1.05) + "]\n";
  }
  return a;
}

// One line per endpoint over the finite rates, and its run sent all at once as a marker of the
// same colour.
void add_rate_series(Plot& p, const ServeReport& r, const RateAxis& axis,
                     const std::function<std::optional<double>(const RunReport&)>& value) {
  int color = 0;
  for (const auto& e : r.endpoints) {
    ++color;
    const std::string lc = " linecolor " + std::to_string(color);
    Series s{e.label, {}, kLineStyle + lc};
    Series all{e.label + ", all at once", {}, "points pointtype 9 pointsize 1.6" + lc};
    for (const auto& run : r.runs) {
      if (run.label != e.label) continue;
      if (const auto v = value(run))
        (std::isinf(run.rate) ? all : s).points.push_back({axis.x(run.rate), *v});
    }
    std::sort(s.points.begin(), s.points.end());
    p.series.push_back(std::move(s));
    p.series.push_back(std::move(all));
  }
}

// Attainment per rate.
Plot attainment_vs_rate(const ServeReport& r, const std::string& slo_text, double target) {
  const RateAxis axis = rate_axis(r);
  Plot p{"attainment_vs_rate",
         "SLO attainment (per request) vs request rate (" + slo_text + ")",
         "request rate (req/s)",
         "SLO attainment (%)",
         {},
         "set yrange [0:105]\n" + hline(target, "target") + axis.commands};
  add_rate_series(p, r, axis, [](const RunReport& run) -> std::optional<double> {
    return 100 * run.summary.attainment;
  });
  return p;
}

// P90 of a latency (over the completed requests, as the Results table gives it) per rate, the
// SLO as a horizontal line, or named at the top when it lies far above the data.
Plot p90_vs_rate(const ServeReport& r, const std::string& what, const std::string& ylabel,
                 Distribution Summary::*field, double slo_ms) {
  const RateAxis axis = rate_axis(r);
  Plot p{"p90_" + stem_part(what) + "_vs_rate",
         "P90 " + what + " vs request rate",
         "request rate (req/s)",
         "P90 " + ylabel + " (ms)",
         {},
         axis.commands};
  add_rate_series(p, r, axis, [&](const RunReport& run) -> std::optional<double> {
    const Distribution& d = run.summary.*field;
    if (d.count == 0) return std::nullopt;
    return d.p90;
  });
  double top = 0;
  for (const auto& s : p.series)
    for (const auto& pt : s.points) top = std::max(top, pt.second);
  if (slo_ms > 0 && slo_ms <= 2 * top) {
    p.extra += "set yrange [0:" + num(std::max(top, slo_ms) * 1.1) + "]\n" +
               hline(slo_ms, "SLO " + ms_label(slo_ms));
  } else {
    p.extra += "set yrange [0:" + num(top > 0 ? top * 1.1 : 1) + "]\n";
    if (slo_ms > 0)
      p.extra += "set label " + gp_quote("SLO " + ms_label(slo_ms) + " (above)") +
                 " at graph 0.99, graph 0.95 right" + kGrey + "\n";
  }
  return p;
}

}  // namespace

std::vector<PlotScript> plot_scripts(const ServeReport& r) {
  const ServeOptions& o = r.options;
  const double target = 100 * o.attainment_target;
  const double ttft_slo = o.slo.ttft_ms * o.slo_scale, tpot_slo = o.slo.tpot_ms * o.slo_scale;
  const std::string slo_text = "TTFT <= " + ms_label(ttft_slo) + ", TPOT <= " + ms_label(tpot_slo);
  // The rates run, in order, once each (a goodput search picks them as it goes).
  std::vector<double> rates;
  for (const auto& run : r.runs)
    if (std::find(rates.begin(), rates.end(), run.rate) == rates.end()) rates.push_back(run.rate);
  std::vector<Plot> plots;
  const bool slo = o.slo.given();  // without one: the CDFs only
  const bool any_finite =
      std::any_of(rates.begin(), rates.end(), [](double x) { return !std::isinf(x); });
  if (slo && any_finite) plots.push_back(attainment_vs_rate(r, slo_text, target));
  // The paper's latency pictures: P90 TTFT and TPOT against the rate, the SLO drawn.
  if (any_finite) {
    plots.push_back(
        p90_vs_rate(r, "TTFT", "time to first token", &Summary::ttft_ms, slo ? ttft_slo : 0));
    plots.push_back(
        p90_vs_rate(r, "TPOT", "time per output token", &Summary::tpot_ms, slo ? tpot_slo : 0));
  }

  // One picture per rate for the per-run views, so that each compares endpoints at one load.
  const bool many_rates = rates.size() > 1;
  for (double rate : rates) {
    const std::string suffix = many_rates ? "_rate-" + stem_part(rate_file_label(rate)) : "";
    const std::string at = ", " + rate_with_unit(rate);
    Plot scale{"attainment_vs_slo_scale" + suffix,
               "SLO attainment vs SLO scale" + at,
               "SLO scale (x the targets)",
               "SLO attainment (%)",
               {},
               "set yrange [0:105]\n" + hline(target, "target")};
    Plot ttft{
        "ttft_cdf" + suffix,   "TTFT CDF" + at, "time to first token (ms)", "requests (%)", {},
        "set yrange [0:100]\n"};
    Plot tpot{
        "tpot_cdf" + suffix,   "TPOT CDF" + at, "time per output token (ms)", "requests (%)", {},
        "set yrange [0:100]\n"};
    Plot e2el{"e2el_cdf" + suffix,
              "E2E latency CDF" + at,
              "end-to-end latency (ms)",
              "requests (%)",
              {},
              "set yrange [0:100]\n"};
    std::vector<double> all_ttft, all_tpot, all_e2el;
    for (const auto& run : r.runs) {
      if (run.rate != rate) continue;
      Series sc{run.label, {}, kLineStyle};
      for (const auto& [s, a] : run.scale_curve) sc.points.push_back({s, 100 * a});
      scale.series.push_back(std::move(sc));
      std::vector<double> t1, t2, t3;
      for (const auto& rec : run.records) {
        if (!rec.ok) continue;
        const RequestMetrics m = request_metrics(rec);
        t1.push_back(m.ttft_s * 1000);
        if (m.tpot_s) t2.push_back(*m.tpot_s * 1000);
        t3.push_back(m.e2el_s * 1000);
      }
      all_ttft.insert(all_ttft.end(), t1.begin(), t1.end());
      all_tpot.insert(all_tpot.end(), t2.begin(), t2.end());
      all_e2el.insert(all_e2el.end(), t3.begin(), t3.end());
      ttft.series.push_back({run.label, cdf(t1), kStepStyle});
      tpot.series.push_back({run.label, cdf(t2), kStepStyle});
      e2el.series.push_back({run.label, cdf(t3), kStepStyle});
    }
    if (!all_e2el.empty()) {
      const auto [lo, hi] = data_span(all_e2el);
      e2el.extra += "set xrange [" + num(lo) + ":" + num(hi) + "]\n";
    }
    if (slo) {
      ttft.extra += cdf_range(all_ttft, ttft_slo);
      tpot.extra += cdf_range(all_tpot, tpot_slo);
      plots.push_back(std::move(scale));
    }
    plots.push_back(std::move(ttft));
    plots.push_back(std::move(tpot));
    plots.push_back(std::move(e2el));
  }
  std::vector<PlotScript> out;
  for (const auto& p : plots)
    if (PlotScript s = script_of(p); !s.name.empty()) out.push_back(std::move(s));
  return out;
}

std::string gnuplot_terminal() {
  return "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
         "  set terminal pngcairo size 960,600 font 'Sans,11' linewidth 1.5\n"
         "} else {\n"
         "  set terminal png size 960,600\n"
         "}\n"
         "set termoption noenhanced\n";
}

std::string find_gnuplot() {
  const char* env = std::getenv("SANDWICH_GNUPLOT");
  const std::string cmd = env && *env ? env : "gnuplot";
  const std::string probe = shell_quote(cmd) + " --version > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? shell_quote(cmd) : std::string();
}

std::string draw_plot(const PlotScript& p, const std::string& out_dir, std::ostream& log) {
  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    log << "warning: cannot create " << dir.string() << ": " << ec.message() << "\n";
    return {};
  }
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    std::ofstream(dir / (p.name + ".dat")) << p.data;
    std::ofstream(dir / (p.name + ".gp")) << p.script;
    log << "warning: gnuplot not found (install gnuplot-nox, or set SANDWICH_GNUPLOT); "
        << (dir / (p.name + ".gp")).string() << " draws the picture later\n";
    return {};
  }
  return draw(p, dir, gnuplot, log);
}

std::vector<std::string> write_plots(const ServeReport& r, const std::string& out_dir,
                                     std::ostream& log) {
  std::vector<std::string> files;
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    log << "warning: gnuplot not found (install gnuplot-nox, or set SANDWICH_GNUPLOT); no pictures "
           "drawn\n";
    return files;
  }
  const fs::path dir = fs::path(out_dir) / "plots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    log << "warning: cannot create " << dir.string() << ": " << ec.message()
        << "; no pictures drawn\n";
    return files;
  }
  for (const auto& p : plot_scripts(r))
    if (std::string png = draw(p, dir, gnuplot, log); !png.empty()) files.push_back(png);
  return files;
}

}  // namespace sandwich::bench
