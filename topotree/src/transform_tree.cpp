// The transformation tree: group closure first, then removes in topological order with pruning.
#include "topotree/transform_tree.h"

#include <chrono>
#include <deque>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "topotree/transforms.h"

namespace sandwich::topotree {
namespace {

struct Entry {
  TopoTree tree;
  int group_levels = 0;  // group transforms on the way from the fundamental tree
  bool all_cores = true;
  double parents_best = kUnusable;  // best score among the trees that generated it
  double score = kUnusable;
};

class Seen {
 public:
  explicit Seen(HashMode mode) : mode_(mode) {}
  // The index of an equivalent tree already stored, if any.
  std::optional<size_t> find(const TopoTree& t, uint64_t h,
                             const std::deque<Entry>& entries) const {
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) return std::nullopt;
    for (size_t i : it->second)
      if (equivalent(entries[i].tree, t, mode_)) return i;
    return std::nullopt;
  }
  void add(uint64_t h, size_t index) { by_hash_[h].push_back(index); }
  HashMode mode() const { return mode_; }

 private:
  HashMode mode_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_hash_;
};

}  // namespace

ExploreStats explore_transforms(const TopoTree& fundamental, const ExploreOptions& options,
                                const TreeVisitor& visit) {
  ExploreStats st;
  std::deque<Entry> entries;  // stable references while growing
  Seen seen(options.hash);
  int64_t order = 0;
  const auto start = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
               options.max_seconds;
  };
  auto full = [&] {
    if (static_cast<int64_t>(entries.size()) >= options.max_trees || out_of_time())
      st.truncated = true;
    return st.truncated;
  };

  // Group closure, breadth first: each group adds a level, so parents come before children.
  entries.push_back({fundamental, 0, true});
  seen.add(tree_hash(fundamental, options.hash), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    e.score = visit(e.tree, {true, order++});
    ++st.group_trees;
    if (e.group_levels >= options.max_group_levels) continue;
    for (const GroupSpec& g : valid_groups(e.tree)) {
      if (full()) break;
      ++st.transforms;
      TopoTree child = apply_group(e.tree, g);
      const uint64_t h = tree_hash(child, options.hash);
      if (seen.find(child, h, entries)) {
        ++st.deduplicated;
        continue;
      }
      seen.add(h, entries.size());
      entries.push_back({std::move(child), e.group_levels + 1, true});
    }
  }
  if (!options.removes) return st;

  // Removes: most PUs first (a remove always takes PUs away), then fewest levels.
  auto later = [&](size_t a, size_t b) {
    const TopoTree &ta = entries[a].tree, &tb = entries[b].tree;
    if (ta.leaf_count() != tb.leaf_count()) return ta.leaf_count() < tb.leaf_count();
    if (ta.level_count() != tb.level_count()) return ta.level_count() > tb.level_count();
    return a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> queue(later);
  const size_t n_group_trees = entries.size();
  auto expand = [&](size_t i) {
    for (const RemoveSpec& r : valid_removes(entries[i].tree)) {
      if (full()) return;
      ++st.transforms;
      TopoTree child = apply_remove(entries[i].tree, r);
      const uint64_t h = tree_hash(child, options.hash);
      const double parent_score = entries[i].score;
      if (auto j = seen.find(child, h, entries)) {
        ++st.deduplicated;
        entries[*j].parents_best = std::min(entries[*j].parents_best, parent_score);
        continue;
      }
      seen.add(h, entries.size());
      entries.push_back({std::move(child), entries[i].group_levels, false, parent_score});
      queue.push(entries.size() - 1);
    }
  };
  for (size_t i = 0; i < n_group_trees; ++i) expand(i);
  while (!queue.empty()) {
    // Past the time limit the trees still queued are left unvisited too.
    if (options.max_seconds > 0 && out_of_time()) {
      st.truncated = true;
      break;
    }
    const size_t i = queue.top();
    queue.pop();
    Entry& e = entries[i];
    e.score = visit(e.tree, {false, order++});
    ++st.remove_trees;
    if (e.score < e.parents_best) {
      expand(i);
    } else {
      ++st.pruned;
    }
  }
  return st;
}

}  // namespace sandwich::topotree
