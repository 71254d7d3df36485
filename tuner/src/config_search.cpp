#include "tuner/config_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace sandwich::tuner {
namespace {

enum class Status { Filtered, EarlyStopped, Evaluated };

struct Record {
  topotree::ServiceConfig config;
  Status status = Status::Filtered;
  Prediction prediction;
  std::string origin;
};

struct Group {
  double best = kNoScore;
  int patience = 0;
  bool stopped = false;
  static constexpr double kNoScore = std::numeric_limits<double>::infinity();
};

class Search {
 public:
  Search(const engine::ModelConfig& model, ConfigEvaluator& evaluator, const SearchOptions& options)
      : model_(model), evaluator_(evaluator), options_(options) {}

  // Scores a tree: its best configuration for the phase (inf if none is usable).
  double visit(const topotree::TopoTree& tree) {
    double best = topotree::kUnusable;
    for (int d = 0; d <= tree.leaf_depth(); ++d) {
      topotree::ServiceConfig c = topotree::cut(tree, d);
      ++stats_.configs_cut;
      // The placement hash keeps apart trees that list the same PUs in another order (a
      // strided group of all the cores it groups); their cuts are one configuration to any
      // evaluator, and evaluating each again would only fill the ranking and spend early
      // stopping's patience.
      if (options_.hash == topotree::HashMode::Placement) c.canonicalize();
      const uint64_t key = c.key();
      if (const Record* r = find(c, key)) {
        ++stats_.configs_deduplicated;
        if (r->status == Status::Evaluated) best = std::min(best, r->prediction.ms);
        continue;
      }
      rank_counts_.insert(c.rank_count());
      Record rec;
      rec.origin = tree.history_string() + ", cut at " + c.cut_label;
      if (!heads_divisible(model_, c.rank_count()) || (options_.numa_local && c.spans_numa()) ||
          (options_.ranks_fit && !options_.ranks_fit(c.rank_count()))) {
        ++stats_.configs_filtered;
        rec.status = Status::Filtered;
      } else {
        auto [it, fresh] =
            groups_.try_emplace(std::to_string(c.rank_count()) + "|" + c.placement());
        Group& g = it->second;
        if (fresh) {
          ++stats_.groups;
          g.patience = options_.patience;
        }
        if (g.stopped) {
          ++stats_.configs_early_stopped;
          rec.status = Status::EarlyStopped;
        } else {
          rec.prediction = evaluator_.evaluate(c, options_.phase);
          rec.status = Status::Evaluated;
          ++stats_.configs_evaluated;
          best = std::min(best, rec.prediction.ms);
          // A tie neither helps nor costs patience: configurations the evaluator cannot tell
          // apart (the same cores in another order) would otherwise exhaust a group.
          const bool tie = std::isfinite(g.best) &&
                           std::abs(rec.prediction.ms - g.best) <= 1e-9 * std::abs(g.best);
          if (rec.prediction.ms < g.best && !tie) {
            g.best = rec.prediction.ms;
            g.patience = options_.patience;
          } else if (!tie && options_.patience > 0 && --g.patience <= 0) {
            g.stopped = true;
            ++stats_.groups_stopped;
          }
        }
      }
      rec.config = std::move(c);
      by_key_[key].push_back(records_.size());
      records_.push_back(std::move(rec));
    }
    return best;
  }

  SearchResult finish(topotree::ExploreStats trees) {
    SearchResult out;
    out.phase = options_.phase;
    out.evaluator = evaluator_.name();
    stats_.trees = trees;
    std::vector<const Record*> evaluated;
    for (const Record& r : records_)
      if (r.status == Status::Evaluated) evaluated.push_back(&r);
    if (evaluated.empty()) {
      std::string counts;
      for (int n : rank_counts_) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
      std::string why =
          "no service configuration of this topology fits " + model_.name + ": it has " +
          std::to_string(model_.n_heads) + " query heads and " + std::to_string(model_.n_kv_heads) +
          " KV heads, and a rank count must divide both" +
          (options_.ranks_fit ? " (and split its weights: quantized shards hold whole blocks)"
                              : "") +
          "; the " + phase_name(options_.phase) + " candidates have " + counts + " ranks";
      if (options_.numa_local)
        why += " (and ranks must stay inside one NUMA node: drop --numa-local to allow more)";
      throw std::invalid_argument(why);
    }
    std::stable_sort(evaluated.begin(), evaluated.end(), [](const Record* a, const Record* b) {
      return a->prediction.ms < b->prediction.ms;
    });
    const Phase other = options_.phase == Phase::Prefill ? Phase::Decode : Phase::Prefill;
    for (const Record* r : evaluated) {
      if (static_cast<int>(out.ranked.size()) >= options_.top_k) break;
      RankedConfig rc{r->config, r->prediction, {}, r->origin};
      if (evaluator_.cheap()) rc.other_phase = evaluator_.evaluate(r->config, other);
      out.ranked.push_back(std::move(rc));
    }
    out.stats = stats_;
    return out;
  }

 private:
  const Record* find(const topotree::ServiceConfig& c, uint64_t key) const {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return nullptr;
    for (size_t i : it->second)
      if (records_[i].config == c) return &records_[i];
    return nullptr;
  }

  const engine::ModelConfig& model_;
  ConfigEvaluator& evaluator_;
  const SearchOptions& options_;
  SearchStats stats_;
  std::vector<Record> records_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_key_;
  std::unordered_map<std::string, Group> groups_;
  std::set<int> rank_counts_;
};

}  // namespace

const char* phase_name(Phase p) {
  return p == Phase::Prefill ? "prefill" : "decode";
}

bool heads_divisible(const engine::ModelConfig& model, int ranks) {
  return ranks >= 1 && model.n_heads % ranks == 0 && model.n_kv_heads % ranks == 0;
}

SearchResult search_configs(const topotree::TopoTree& machine, const engine::ModelConfig& model,
                            ConfigEvaluator& evaluator, const SearchOptions& options) {
  if (options.top_k < 1) throw std::invalid_argument("top-k must be at least 1");
  if (options.patience < 0) throw std::invalid_argument("patience must be >= 0");
  const auto start = std::chrono::steady_clock::now();
  Search search(model, evaluator, options);
  topotree::ExploreOptions eo;
  eo.hash = options.hash;
  eo.removes = options.phase == Phase::Decode;
  eo.max_group_levels = options.max_group_levels;
  eo.max_trees = options.max_trees;
  eo.max_seconds = options.max_seconds;
  const topotree::ExploreStats trees = topotree::explore_transforms(
      machine, eo,
      [&](const topotree::TopoTree& t, const topotree::VisitInfo&) { return search.visit(t); });
  SearchResult r = search.finish(trees);
  r.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace sandwich::tuner
