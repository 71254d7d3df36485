#include "endpoint_runs.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "bench/arrivals.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "endpoint_prompts.h"

namespace sandwich::bench {
namespace {

class EndpointRuns {
 public:
  EndpointRuns(HttpClient& client, TerminalProgress& progress, ServeReport& rep, size_t e,
               const std::vector<int>& prompt_lens, const PromptSalts& salts, std::ostream& log)
      : client_(client),
        progress_(progress),
        rep_(rep),
        o_(rep.options),
        ep_(rep.options.endpoints[e]),
        er_(rep.endpoints[e]),
        prompt_lens_(prompt_lens),
        salts_(salts),
        log_(log),
        n_(rep.lengths.size()) {}

  void run() {
    build_requests();
    // The warm-up runs one request at a time and shows no progress.
    ro_ = {.url = ep_.url,
           .api = o_.api,
           .model = er_.model,
           .extra_body = o_.extra_body,
           .bearer = o_.api_key,
           .timeout_s = o_.timeout_s};
    if (!warmups_.empty()) warm_up();
    ro_.max_concurrency = o_.max_concurrency;
    ro_.progress = [this](const RunProgress& p) { show_progress(p); };
    if (o_.goodput_search.enabled)
      search_goodput();
    else
      sweep_rates();
  }

 private:
  // The measured requests (the first n prompts) and the warm-up ones (the rest).
  void build_requests() {
    const std::vector<BuiltPrompt> built =
        build_prompts(client_, ep_, er_, o_, prompt_lens_, salts_.first, salts_.prefix, log_);
    for (size_t i = 0; i < built.size(); ++i) {
      const LengthPair& len = rep_.lengths[i % n_];
      BenchRequest q{built[i].text, len.input + o_.shared_prefix_tokens, built[i].tokens,
                     len.output};
      if (i < n_) {
        er_.prompts_exact += built[i].exact;
        ++er_.prompts;
        requests_.push_back(std::move(q));
      } else {
        warmups_.push_back(std::move(q));
      }
    }
    if (er_.tokenizer != "approximate" && er_.prompts_exact < er_.prompts)
      er_.notes.push_back(
          std::to_string(er_.prompts - er_.prompts_exact) +
          " prompts could not be built to their exact length (a token merge at the seam); the "
          "closest was used");
  }

  void warm_up() {
    log_ << "[" << ep_.label << "] " << warmups_.size() << " warm-up requests\n";
    RunOptions one = ro_;
    one.max_concurrency = 1;
    const auto recs =
        run_requests(client_, one, warmups_, std::vector<double>(warmups_.size(), 0.0));
    const auto failed =
        std::count_if(recs.begin(), recs.end(), [](const RequestRecord& r) { return !r.ok; });
    if (failed)
      er_.notes.push_back(std::to_string(failed) + " of " + std::to_string(recs.size()) +
                          " warm-up requests failed");
  }

  void show_progress(const RunProgress& p) {
    if (progress_.enabled()) return progress_.update(ep_.label, step_, p);
    // Without a terminal, a line per tenth of a long run, so a person reading the log sees it
    // move.
    if (p.total >= 50 && p.done * 10 / p.total != (p.done - 1) * 10 / p.total)
      log_ << "[" << ep_.label << "]   " << p.done << " / " << p.total << " requests done\n"
           << std::flush;
  }

  // Every run after the first gets fresh salts.
  void rebuild_prompts() {
    const std::vector<int> lens(prompt_lens_.begin(),
                                prompt_lens_.begin() + static_cast<std::ptrdiff_t>(n_));
    const auto again =
        build_prompts(client_, ep_, er_, o_, lens, salts_.first + salts_.per_run * run_index_,
                      salts_.prefix, log_);
    for (size_t i = 0; i < n_; ++i) {
      requests_[i].prompt = again[i].text;
      requests_[i].prompt_tokens = again[i].tokens;
    }
  }

  void log_run_start(double rate, int probe) {
    log_ << "[" << ep_.label << "] "
         << (probe > 0 ? "goodput search, probe " + std::to_string(probe) + " of at most " +
                             std::to_string(o_.goodput_search.max_probes()) + ": "
                       : std::string())
         << n_ << " requests, " << rate_with_unit(rate)
         << (o_.max_concurrency > 0 ? ", concurrency <= " + std::to_string(o_.max_concurrency)
                                    : std::string())
         << "\n";
  }

  // One run at this rate; probe: its number in a goodput search (0 in a sweep).
  bool run_at(double rate, int probe) {
    if (run_index_ > 0) rebuild_prompts();
    ++run_index_;
    step_ = probe > 0 ? "probe " + std::to_string(probe) + ", " + rate_with_unit(rate)
                      : rate_with_unit(rate);
    log_run_start(rate, probe);
    RunReport run;
    run.label = ep_.label;
    run.url = er_.url;
    run.model = er_.model;
    run.rate = rate;
    run.probe = probe;
    run.records = run_requests(client_, ro_, requests_,
                               arrival_times(static_cast<int>(n_), rate, o_.burstiness, o_.seed));
    progress_.clear();
    run.summary = summarize(run.records, o_.slo, o_.slo_scale, o_.attainment_target);
    if (o_.slo.given())
      for (double s : rep_.scales)
        run.scale_curve.push_back({s, attainment(run.records, o_.slo, s)});
    log_ << format_run_summary(run, o_.attainment_target);
    rep_.runs.push_back(std::move(run));
    return run_meets_slo(rep_.runs.back().summary, o_.slo_definition, o_.attainment_target);
  }

  void search_goodput() {
    const GoodputSearch& g = o_.goodput_search;
    int probe = 0;
    if (!run_at(g.min_rate, ++probe)) {
      er_.goodput_miss_rate = g.min_rate;
    } else if (run_at(g.max_rate, ++probe)) {
      er_.goodput_rate = g.max_rate;
    } else {
      double hit = g.min_rate, miss = g.max_rate;
      while (miss - hit > g.resolution && probe < g.max_probes()) {
        const double mid = (hit + miss) / 2;
        (run_at(mid, ++probe) ? hit : miss) = mid;
      }
      er_.goodput_rate = hit;
      er_.goodput_miss_rate = miss;
    }
  }

  void sweep_rates() {
    std::vector<std::pair<double, bool>> rate_met;
    for (double rate : o_.rates) rate_met.push_back({rate, run_at(rate, 0)});
    if (!o_.slo.given()) return;  // no goodput without an SLO
    er_.goodput_rate = goodput_rate(rate_met);
    std::sort(rate_met.begin(), rate_met.end());
    for (const auto& [rate, met] : rate_met)
      if (!met) {
        er_.goodput_miss_rate = rate;
        break;
      }
  }

  HttpClient& client_;
  TerminalProgress& progress_;
  ServeReport& rep_;
  const ServeOptions& o_;
  const Endpoint& ep_;
  EndpointReport& er_;
  const std::vector<int>& prompt_lens_;
  const PromptSalts salts_;
  std::ostream& log_;
  const size_t n_;
  std::vector<BenchRequest> requests_, warmups_;
  RunOptions ro_;
  std::string step_;  // what the progress line calls the current run
  int run_index_ = 0;
};

}  // namespace

void run_endpoint(HttpClient& client, TerminalProgress& progress, ServeReport& rep, size_t endpoint,
                  const std::vector<int>& prompt_lens, const PromptSalts& salts,
                  std::ostream& log) {
  EndpointRuns(client, progress, rep, endpoint, prompt_lens, salts, log).run();
}

}  // namespace sandwich::bench
