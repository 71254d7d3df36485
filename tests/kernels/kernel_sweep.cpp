// bench_kernels --sweep (see kernel_sweep.h). The schemes are the GEMM tuner's own search space
// (tuner::search_space) and are timed by the tuner's profiler (weights packed as the engine
// packs them, rotated past the last-level cache, a pinned team), so the figure shows what the
// tuner chooses among; the tuner's choice is its one-M search (GemmTuner::tune_at), timed again
// among the schemes.
#include "kernel_sweep.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "bench/plots.h"
#include "kernels/peak_probes.h"
#include "kernels/schedule.h"
#include "kernels/thread_team.h"
#include "kernels/tuned_schedules.h"
#include "tuner/gemm_tuner.h"

namespace sandwich::kernels {

namespace {

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

constexpr int kPeakRounds = 40;

struct Peak {
  double gflops = 0;
  std::string what;  // "BF16 (vdpbf16ps)" or "FP32 FMA"
};

// The best of a few rounds of the peak loop on every thread: the roofline's compute limit. The
// BF16 dot product where the CPU has it (the GEMMs' instruction), else FP32 FMAs (what the AVX2
// kernels widen BF16 to).
Peak measure_peak(int threads) {
  PeakLoop loop = bf16_dot_peak_loop();
  Peak p{0, "BF16 vdpbf16ps"};
  if (!loop.run) {
    loop = fma_f32_peak_loop();
    p.what = "FP32 FMA";
  }
  if (!loop.run) return {};
  ThreadTeam team(threads);
  // Many short rounds, the best: on a busy machine some round runs undisturbed.
  constexpr int64_t kIters = 1 << 18;
  for (int round = 0; round < kPeakRounds; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    team.run([&](int, int) {
      volatile float sink = loop.run(kIters);
      (void)sink;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    p.gflops = std::max(p.gflops, loop.flops_per_iter * kIters * threads / s / 1e9);
  }
  return p;
}

struct Row {
  Schedule schedule;
  double seconds = 0, gflops = 0;
  bool cost_model = false, tuner = false;
};

std::string choice_of(const Row& r) {
  if (r.cost_model && r.tuner) return "cost_model+tuner";
  return r.cost_model ? "cost_model" : r.tuner ? "tuner" : "";
}

std::string split_of(const Schedule& c) {
  return std::to_string(c.tm) + "x" + std::to_string(c.tn) + "x" + std::to_string(c.tk);
}

std::string shape_stem(const GemmShape& s) {
  return "sweep_M" + std::to_string(s.m) + "_N" + std::to_string(s.n) + "_K" + std::to_string(s.k) +
         "_t" + std::to_string(s.threads);
}

// An even sample of `n` from the space, the marked schedules always kept.
std::vector<Schedule> sample(const std::vector<Schedule>& space, size_t n,
                             const std::vector<Schedule>& keep) {
  std::vector<Schedule> out;
  if (space.size() <= n) {
    out = space;
  } else {
    for (size_t i = 0; i < n; ++i) out.push_back(space[i * space.size() / n]);
  }
  for (const Schedule& k : keep)
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

void write_csv(const std::string& path, const GemmShape& s, const std::vector<Row>& rows,
               const Peak& peak) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "m,n,k,threads,schedule,um,un,bm,bn,bk,tm,tn,tk,prefetch,seconds,gflops,peak_fraction,"
       "choice\n";
  for (const Row& r : rows) {
    const Schedule& c = r.schedule;
    f << s.m << "," << s.n << "," << s.k << "," << s.threads << ",\"" << c.to_string() << "\","
      << c.um << "," << c.un << "," << c.bm << "," << c.bn << "," << c.bk << "," << c.tm << ","
      << c.tn << "," << c.tk << "," << (c.prefetch ? 1 : 0) << "," << r.seconds << "," << r.gflops
      << "," << (peak.gflops > 0 ? r.gflops / peak.gflops : 0) << "," << choice_of(r) << "\n";
  }
  if (!f) throw std::runtime_error("cannot write " + path);
}

// GFLOPS of every scheme in rank order (slowest first), one colour per thread split, the two
// choices as large labelled markers; the right axis reads the fraction of the measured peak.
bench::PlotScript picture(const GemmShape& s, const std::vector<Row>& rows, const Peak& peak) {
  std::vector<const Row*> order;
  for (const Row& r : rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const Row* a, const Row* b) { return a->gflops < b->gflops; });
  std::map<std::string, std::vector<std::pair<size_t, double>>> by_split;
  std::vector<std::pair<std::string, std::pair<size_t, double>>> marks;
  double top = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    by_split[split_of(order[i]->schedule)].push_back({i + 1, order[i]->gflops});
    top = std::max(top, order[i]->gflops);
    if (order[i]->cost_model) marks.push_back({"cost model", {i + 1, order[i]->gflops}});
    if (order[i]->tuner) marks.push_back({"tuner", {i + 1, order[i]->gflops}});
  }
  bench::PlotScript p;
  p.name = shape_stem(s);
  std::ostringstream d, g;
  d.precision(8);
  std::vector<std::string> titles, styles;
  for (const auto& [split, pts] : by_split) {
    d << "# threads " << split << "\n";
    for (const auto& [x, y] : pts) d << x << " " << y << "\n";
    d << "\n\n";
    titles.push_back("threads tm x tn x tk = " + split);
    styles.push_back("points pointtype 7 pointsize 0.6");
  }
  for (const auto& [name, pt] : marks) {
    d << "# " << name << "\n" << pt.first << " " << pt.second << "\n\n\n";
    titles.push_back(name);
    styles.push_back(name == "tuner" ? "points pointtype 6 pointsize 2.4 linecolor rgb 'black'"
                                     : "points pointtype 4 pointsize 2.0 linecolor rgb 'red'");
  }
  p.data = d.str();
  g << bench::gnuplot_terminal();
  g << "set output '" << p.name << ".png'\n";
  g << "set title 'GEMM M=" << s.m << " N=" << s.n << " K=" << s.k << " BF16, " << s.threads
    << " threads: " << rows.size() << " block x thread schemes'\n";
  g << "set xlabel 'scheme (by GFLOPS)'\nset ylabel 'GFLOPS'\nset grid\n";
  g << "set key inside left top\n";
  g << "set yrange [0:" << top * 1.1 << "]\n";
  if (peak.gflops > 0) {
    // Percent of the peak on the right, tics at 1, 2 or 5 times a power of ten.
    const double span = top * 1.1 / peak.gflops * 100;
    const double mag = std::pow(10, std::floor(std::log10(span / 5)));
    double step = 10 * mag;
    for (double f : {1.0, 2.0, 5.0})
      if (f * mag >= span / 5) {
        step = f * mag;
        break;
      }
    g << "set y2label '% of the measured " << peak.what << " peak ("
      << static_cast<int>(std::lround(peak.gflops)) << " GFLOPS)'\n";
    g << "set y2tics " << step << "\nset ytics nomirror\n";
    g << "set link y2 via y*100/" << peak.gflops << " inverse y*" << peak.gflops << "/100\n";
  }
  g << "plot ";
  for (size_t i = 0; i < titles.size(); ++i)
    g << (i ? ", \\\n     " : "") << "'" << p.name << ".dat' index " << i << " using 1:2 with "
      << styles[i] << " title '" << titles[i] << "'";
  g << "\n";
  p.script = g.str();
  return p;
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int rounds(const SweepOptions& o) {
  return o.quick ? 3 : 2;
}

// `peak`: the highest measured so far in this run, raised by a measurement right after this
// shape's timings (a busy machine lowers some of them; the highest is the nearest the limit).
void sweep_shape(const GemmShape& s, const SweepOptions& o, Peak& peak) {
  const auto t0 = std::chrono::steady_clock::now();
  tuner::ProfilerOptions po;  // a median of 3 calls, at least 10 ms, per measurement
  // The tuner's search and the sweep each time on their own: the sweep times the tuner's
  // winner again beside the rest, so its rank carries no selection bias from the search.
  auto profiler = tuner::make_machine_profiler(po);

  const Schedule cost = default_schedule(s);
  tuner::GemmTunerOptions to;
  if (o.quick) to.finetune_kernels = 1;
  tuner::GemmTuner tuner(*profiler, to);
  const tuner::TunedPoint tuned = tuner.tune_at(key_of(s), s.m);
  const double search_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<std::pair<int, int>> tiles;
  if (!o.all_tiles) tiles = {{cost.um, cost.un}, {tuned.schedule.um, tuned.schedule.un}};
  const std::vector<Schedule> space = tuner::search_space(s, tiles);
  const std::vector<Schedule> timed =
      sample(space, o.quick ? 60 : space.size(), {cost, tuned.schedule});

  // Every scheme once a round, the rounds in alternating order; a scheme's time is its best
  // round: a busy machine only ever adds time, and drift then hits every scheme alike.
  std::vector<Row> rows(timed.size());
  for (int round = 0; round < rounds(o); ++round)
    for (size_t j = 0; j < timed.size(); ++j) {
      const size_t i = round % 2 ? timed.size() - 1 - j : j;
      const double t = profiler->seconds(s, timed[i]);
      if (round == 0 || t < rows[i].seconds) rows[i].seconds = t;
    }
  for (size_t i = 0; i < timed.size(); ++i) {
    Row& r = rows[i];
    r.schedule = timed[i];
    r.gflops = 2.0 * s.m * s.n * s.k / r.seconds / 1e9;
    r.cost_model = timed[i] == cost;
    r.tuner = timed[i] == tuned.schedule;
  }
  if (const Peak after = measure_peak(s.threads); after.gflops > peak.gflops) peak = after;
  std::vector<const Row*> order;
  std::vector<double> g;
  for (const Row& r : rows) order.push_back(&r), g.push_back(r.gflops);
  std::sort(order.begin(), order.end(),
            [](const Row* a, const Row* b) { return a->gflops > b->gflops; });
  auto rank_of = [&](const Schedule& c) {
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i]->schedule == c) return i + 1;
    return size_t{0};
  };
  auto frac = [&](double gf) { return peak.gflops > 0 ? 100 * gf / peak.gflops : 0.0; };
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("\n== GEMM M=%lld N=%lld K=%lld BF16, %d threads: %zu schemes timed", (long long)s.m,
              (long long)s.n, (long long)s.k, s.threads, rows.size());
  if (rows.size() < space.size()) std::printf(" (an even sample of the space's %zu)", space.size());
  std::printf(", each its best of %d rounds, %.0f s ==\n", rounds(o), secs);
  if (peak.gflops > 0)
    std::printf("%s peak, %d threads: %.1f GFLOPS (the best of %d rounds before and after)\n",
                peak.what.c_str(), s.threads, peak.gflops, kPeakRounds);
  std::printf("the tuner's search at this M: %lld schedules measured in %.0f s (%s)\n",
              static_cast<long long>(tuner.stats().profiled), search_s, tuned.how.c_str());
  std::printf("%4s %8s %7s  %s\n", "rank", "GFLOPS", "% peak", "schedule");
  auto line = [&](size_t rank, const Row& r) {
    std::printf("%4zu %8.1f %6.1f%%  %s%s\n", rank, r.gflops, frac(r.gflops),
                r.schedule.to_string().c_str(),
                choice_of(r).empty() ? "" : ("  <- " + choice_of(r)).c_str());
  };
  const size_t shown = std::min<size_t>(10, order.size());
  for (size_t i = 0; i < shown; ++i) line(i + 1, *order[i]);
  if (order.size() > shown) std::printf(" ...\n");
  for (size_t i = shown; i < order.size(); ++i)
    if (order[i]->cost_model || order[i]->tuner) line(i + 1, *order[i]);
  if (order.size() > shown) line(order.size(), *order.back());
  const double best = order.front()->gflops, worst = order.back()->gflops;
  double cost_gf = 0, tuner_gf = 0;
  for (const Row& r : rows) {
    if (r.cost_model) cost_gf = r.gflops;
    if (r.tuner) tuner_gf = r.gflops;
  }
  std::printf(
      "spread: best %.2fx the worst, %.2fx the median; cost model %.3fx and tuner %.3fx the best "
      "(rank %zu and %zu of %zu)\n",
      best / worst, best / median_of(g), cost_gf / best, tuner_gf / best, rank_of(cost),
      rank_of(tuned.schedule), rows.size());

  if (o.out_dir.empty()) return;
  const std::string stem = o.out_dir + "/" + shape_stem(s);
  write_csv(stem + ".csv", s, rows, peak);
  std::printf("wrote %s.csv\n", stem.c_str());
  const std::string png = bench::draw_plot(picture(s, rows, peak), o.out_dir, std::cerr);
  if (!png.empty()) std::printf("wrote %s\n", png.c_str());
}

}  // namespace

std::array<int64_t, 3> parse_sweep_shape(const std::string& text) {
  std::array<int64_t, 3> v{};
  std::istringstream in(text);
  char c1 = 0, c2 = 0;
  if (!(in >> v[0] >> c1 >> v[1] >> c2 >> v[2]) || c1 != ',' || c2 != ',' || !in.eof() ||
      v[0] < 1 || v[1] < 1 || v[2] < 1)
    throw std::invalid_argument("--sweep takes M,N,K (three positive integers), not '" + text +
                                "'");
  return v;
}

int run_sweep(const SweepOptions& o) {
  std::vector<std::array<int64_t, 3>> shapes = o.shapes;
  if (shapes.empty()) shapes = {{128, 1152, 2304}, {512, 768, 1024}};
  const int threads = o.threads > 0 ? o.threads : usable_cpus();
  Peak peak = measure_peak(threads);
  if (peak.gflops <= 0)
    std::printf("no peak loop for this CPU: GFLOPS are shown without a fraction of peak\n");
  if (!o.out_dir.empty()) std::filesystem::create_directories(o.out_dir);
  for (const auto& [m, n, k] : shapes) sweep_shape({m, n, k, DType::BF16, threads}, o, peak);
  return 0;
}

}  // namespace sandwich::kernels
