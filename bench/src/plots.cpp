#include "bench/plots.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
};

struct Plot {
  std::string name;  // file stem
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  std::string extra;   // gnuplot commands before plot (reference lines, ranges)
  bool steps = false;  // CDFs are step functions
};

std::string stem_part(const std::string& s) {
  std::string out = s;
  for (auto& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return out;
}

// Writes name.dat and name.gp and runs gnuplot on them; returns the PNG, or "" after a warning.
std::string draw(const Plot& p, const fs::path& dir, const std::string& gnuplot,
                 std::ostream& log) {
  std::vector<const Series*> live;
  for (const auto& s : p.series)
    if (!s.points.empty()) live.push_back(&s);
  if (live.empty()) return {};
  const fs::path dat = dir / (p.name + ".dat"), gp = dir / (p.name + ".gp"),
                 png = dir / (p.name + ".png");
  {
    std::ofstream d(dat);
    d.precision(10);
    for (size_t i = 0; i < live.size(); ++i) {
      d << "# " << live[i]->title << "\n";
      for (const auto& [x, y] : live[i]->points) d << x << " " << y << "\n";
      d << "\n\n";  // gnuplot's index separator
    }
  }
  {
    std::ofstream g(gp);
    g << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
         "  set terminal pngcairo size 960,600 font 'Sans,11' linewidth 1.5\n"
         "} else {\n"
         "  set terminal png size 960,600\n"
         "}\n"
         "set termoption noenhanced\n";
    g << "set output " << gp_quote(png.filename().string()) << "\n";
    g << "set title " << gp_quote(p.title) << "\nset xlabel " << gp_quote(p.xlabel)
      << "\nset ylabel " << gp_quote(p.ylabel) << "\n";
    g << "set grid\nset key outside right top\n" << p.extra;
    g << "plot ";
    for (size_t i = 0; i < live.size(); ++i) {
      g << (i ? ", \\\n     " : "") << gp_quote(dat.filename().string()) << " index " << i
        << " using 1:2 with " << (p.steps ? "steps" : "linespoints pointtype 7 pointsize 0.8")
        << " title " << gp_quote(live[i]->title);
    }
    g << "\n";
  }
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + gnuplot + " " +
                          shell_quote(gp.filename().string()) + " > " +
                          shell_quote(p.name + ".log") + " 2>&1";
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

// A dashed grey reference line from `from` to `to`, labelled at `label_at` (gnuplot positions).
std::string reference_line(const std::string& from, const std::string& to, const std::string& label,
                           const std::string& label_at) {
  return "set arrow from " + from + " to " + to + " nohead dashtype 2 linecolor rgb 'gray40'\n" +
         "set label " + gp_quote(label) + " at " + label_at + " textcolor rgb 'gray40'\n";
}

// "first <v>": v on the x or y axis.
std::string first_axis(double v) {
  std::ostringstream o;
  o << "first " << v;
  return o.str();
}

std::string vline(double x, const std::string& label) {
  const std::string at = first_axis(x);
  return reference_line(at + ", graph 0", at + ", graph 1", label,
                        at + ", graph 0.04 offset 0.5,0");
}

std::string hline(double y, const std::string& label) {
  const std::string at = first_axis(y);
  return reference_line("graph 0, " + at, "graph 1, " + at, label,
                        "graph 0.01, " + at + " offset 0,0.7");
}

}  // namespace

std::string find_gnuplot() {
  const char* env = std::getenv("SANDWICH_GNUPLOT");
  const std::string cmd = env && *env ? env : "gnuplot";
  const std::string probe = shell_quote(cmd) + " --version > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? shell_quote(cmd) : std::string();
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
  const ServeOptions& o = r.options;
  const double target = 100 * o.attainment_target;
  const std::string slo_text = "TTFT <= " + rate_label(o.slo.ttft_ms * o.slo_scale) +
                               " ms, TPOT <= " + rate_label(o.slo.tpot_ms * o.slo_scale) + " ms";
  std::vector<Plot> plots;

  bool finite_rate = false;
  for (double x : o.rates) finite_rate |= !std::isinf(x);
  if (finite_rate) {
    Plot p{"attainment_vs_rate",
           "SLO attainment vs request rate (" + slo_text + ")",
           "request rate (req/s)",
           "SLO attainment (%)",
           {},
           "set yrange [0:105]\nset xrange [0:*]\n" + hline(target, "target")};
    for (const auto& e : r.endpoints) {
      Series s{e.label, {}};
      for (const auto& run : r.runs)
        if (run.label == e.label && !std::isinf(run.rate))
          s.points.push_back({run.rate, 100 * run.summary.attainment});
      std::sort(s.points.begin(), s.points.end());
      p.series.push_back(std::move(s));
    }
    plots.push_back(std::move(p));
  }

  // One picture per rate for the per-run views, so that each compares endpoints at one load.
  const bool many_rates = o.rates.size() > 1;
  for (double rate : o.rates) {
    const std::string suffix = many_rates ? "_rate-" + stem_part(rate_label(rate)) : "";
    const std::string at = " at " + rate_label(rate) + " req/s";
    Plot scale{"attainment_vs_slo_scale" + suffix,
               "SLO attainment vs SLO scale" + at,
               "SLO scale (x the targets)",
               "SLO attainment (%)",
               {},
               "set yrange [0:105]\n" + hline(target, "target")};
    const double ttft_slo = o.slo.ttft_ms * o.slo_scale, tpot_slo = o.slo.tpot_ms * o.slo_scale;
    double ttft_max = ttft_slo * 1.1, tpot_max = tpot_slo * 1.1;  // the SLO line stays in view
    Plot ttft{"ttft_cdf" + suffix,
              "TTFT CDF" + at,
              "time to first token (ms)",
              "requests (%)",
              {},
              "set yrange [0:100]\n" + vline(ttft_slo, "SLO"),
              true};
    Plot tpot{"tpot_cdf" + suffix,
              "TPOT CDF" + at,
              "time per output token (ms)",
              "requests (%)",
              {},
              "set yrange [0:100]\n" + vline(tpot_slo, "SLO"),
              true};
    for (const auto& run : r.runs) {
      if (run.rate != rate && !(std::isinf(run.rate) && std::isinf(rate))) continue;
      Series sc{run.label, {}};
      for (const auto& [s, a] : run.scale_curve) sc.points.push_back({s, 100 * a});
      scale.series.push_back(std::move(sc));
      std::vector<double> t1, t2;
      for (const auto& rec : run.records) {
        if (!rec.ok) continue;
        const RequestMetrics m = request_metrics(rec);
        t1.push_back(m.ttft_s * 1000);
        if (m.tpot_s) t2.push_back(*m.tpot_s * 1000);
      }
      for (double v : t1) ttft_max = std::max(ttft_max, v * 1.02);
      for (double v : t2) tpot_max = std::max(tpot_max, v * 1.02);
      ttft.series.push_back({run.label, cdf(t1)});
      tpot.series.push_back({run.label, cdf(t2)});
    }
    ttft.extra += "set xrange [0:" + std::to_string(ttft_max) + "]\n";
    tpot.extra += "set xrange [0:" + std::to_string(tpot_max) + "]\n";
    plots.push_back(std::move(scale));
    plots.push_back(std::move(ttft));
    plots.push_back(std::move(tpot));
  }

  for (const auto& p : plots)
    if (std::string png = draw(p, dir, gnuplot, log); !png.empty()) files.push_back(png);
  return files;
}

}  // namespace sandwich::bench
