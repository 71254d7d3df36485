#include "runtime/placed_weights.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "engine/formats/model.h"
#include "kernels/gemm.h"
#include "kernels/panel_slices.h"
#include "kernels/thread_team.h"
#include "runtime/numa_memory.h"

namespace sandwich::engine {
namespace {

constexpr size_t kAlign = 4096;          // as the loader aligns its matrices
constexpr size_t kCopyChunk = 1u << 20;  // a thread's share of a copy, at a time

std::string gb(size_t bytes) {
  char buf[32];
  if (bytes >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, s.c_str());
}

// Where each tensor of weight_tensors() sits in a ModelWeights: a matrix or a vector.
struct Slot {
  kernels::PackedWeight* matrix = nullptr;
  const float** vector = nullptr;
};

// The same order and the same tensors: a pipeline stage's only.
std::vector<Slot> slots(ModelWeights& w, const ModelConfig& c, LayerRange layers) {
  const LayerRange held = resolve_layers(layers, c.n_layers);
  const bool first = held.begin == 0, last = held.end == c.n_layers;
  std::vector<Slot> s;
  // A last stage without layer 0 holds a tied head as its output alone.
  if (first) s.push_back({&w.embedding, nullptr});
  if (!first && last && c.tied_embeddings) s.push_back({&w.output, nullptr});
  if (last && !c.tied_embeddings) s.push_back({&w.output, nullptr});
  if (last) s.push_back({nullptr, &w.final_norm});
  for (int l = held.begin; l < held.end; ++l) {
    LayerWeights& L = w.layers[l];
    s.push_back({nullptr, &L.attn_norm});
    s.push_back({&L.wq, nullptr});
    s.push_back({&L.wk, nullptr});
    s.push_back({&L.wv, nullptr});
    s.push_back({&L.wo, nullptr});
    s.push_back({nullptr, &L.ffn_norm});
    s.push_back({&L.w_gate, nullptr});
    s.push_back({&L.w_up, nullptr});
    s.push_back({&L.w_down, nullptr});
  }
  return s;
}

struct Chunk {
  uint8_t* dst;
  const uint8_t* src;
  size_t bytes;
};

void add_copy(std::vector<Chunk>& chunks, void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  for (size_t off = 0; off < bytes; off += kCopyChunk)
    chunks.push_back({d + off, s + off, std::min(kCopyChunk, bytes - off)});
}

// The copies that make `piece` of a tensor at `dst`: a run of whole panels for a column shard;
// for a K shard, the K range of every panel (contiguous in a panel: K steps of F32/BF16, whole
// blocks of quantized panels), each where the panel of an n x K-range matrix of the same type
// starts, which makes the piece that matrix.
void piece_copies(std::vector<Chunk>& chunks, const Slot& from, const WeightPiece& piece,
                  void* dst) {
  if (from.vector) return add_copy(chunks, dst, *from.vector, piece.bytes);
  const kernels::PackedWeight& w = *from.matrix;
  const auto* src = static_cast<const uint8_t*>(w.data);
  switch (piece.split) {
    case WeightSplit::Replicated:
      return add_copy(chunks, dst, src, w.bytes);
    case WeightSplit::Columns: {
      const size_t off = static_cast<size_t>(piece.range.begin / w.panel) * w.panel_bytes();
      return add_copy(chunks, dst, src + off, std::min(piece.bytes, w.bytes - off));
    }
    case WeightSplit::KRange: {
      const kernels::PackedWeight sub = kernels::plan_packed_like(w, w.n, piece.range.size());
      if (sub.bytes != piece.bytes)
        throw std::logic_error("K shard of " + piece.tensor + " is not laid out as planned");
      for (int64_t p = 0; p < w.panels(); ++p) {
        // Throws where the range would cut a K step or a block.
        const kernels::ByteRange from_bytes =
            kernels::panel_k_bytes(w, p, piece.range.begin, piece.range.end);
        const kernels::ByteRange to = kernels::panel_k_bytes(sub, p, 0, sub.k);
        if (to.bytes != from_bytes.bytes)
          throw std::logic_error("K shard of " + piece.tensor + " is not laid out as planned");
        add_copy(chunks, static_cast<uint8_t*>(dst) + to.offset, src + from_bytes.offset,
                 from_bytes.bytes);
      }
      return;
    }
  }
}

}  // namespace

WeightStorage weight_storage(const Model& model) {
  const ModelConfig& c = model.config;
  ModelWeights loaded = model.weights();
  WeightStorage storage(loaded.dtype);
  storage.layers = model.layers();
  const std::vector<Slot> from = slots(loaded, c, storage.layers);
  std::vector<WeightTensor> tensors = weight_tensors(c, storage);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (from[i].matrix && from[i].matrix->qtype)
      storage.quantized[tensors[i].name] = *from[i].matrix->qtype;
  // The layouts the planner derives must be the loaded ones, or the copies would be cut wrong.
  tensors = weight_tensors(c, storage);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const kernels::PackedWeight* m = from[i].matrix;
    const kernels::PackedWeight& l = tensors[i].layout;
    if (m && (m->qtype != l.qtype || m->dtype != l.dtype || m->n != l.n || m->k != l.k ||
              m->panel != l.panel || m->bytes != l.bytes))
      throw std::logic_error("the loaded " + tensors[i].name + " is not packed as planned");
  }
  return storage;
}

WeightPlacementPlan PlacedWeights::plan() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_;
}

std::vector<const ModelWeights*> PlacedWeights::place(const Model& model,
                                                      const std::vector<int>& rank_nodes, int home,
                                                      bool bind) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  const ModelWeights& loaded = model.weights();
  std::vector<const ModelWeights*> unplaced(rank_nodes.size(), &loaded);
  const std::string what = [&] {
    std::string s = "weights of " + std::to_string(rank_nodes.size()) + " ranks on NUMA";
    for (size_t r = 0; r < rank_nodes.size(); ++r)
      s += (r ? ", " : " ") + std::to_string(rank_nodes[r]);
    return s;
  }();
  for (int node : rank_nodes)
    if (bind && !node_allowed(node)) {
      log_line(what + ": not placed (NUMA node " + std::to_string(node) +
               " is not available to this process)");
      return unplaced;
    }
  try {
    std::vector<std::vector<int>> configs = configs_;
    if (std::find(configs.begin(), configs.end(), rank_nodes) == configs.end())
      configs.push_back(rank_nodes);
    if (!storage_) storage_ = std::make_unique<WeightStorage>(weight_storage(model));
    WeightPlacementPlan plan =
        plan_weight_placement(model.config, *storage_, configs, home_chosen_ ? home_ : home);
    bool placed = false;
    if (bind && !home_bound_ && plan.find(plan.home)) {
      // Pages the loader touched elsewhere move; pages faulted later come from the home node.
      bind_to_node(model.region().data(), model.region().size(), plan.home, true);
      home_bound_ = placed = true;
    }
    for (const NodeWeights& n : plan.nodes)
      if (!n.home) {
        const size_t before = copies_.size();
        copy_missing(model, n, bind);
        placed |= copies_.size() != before;
      }
    home_chosen_ = true;
    home_ = plan.home;
    configs_ = std::move(configs);
    plan_ = std::move(plan);
    std::vector<const ModelWeights*> views;
    const int R = static_cast<int>(rank_nodes.size());
    for (int r = 0; r < R; ++r)
      views.push_back(rank_nodes[r] == home_ ? &loaded : &view(model, rank_nodes[r], r, R));
    if (placed) {
      std::string line = what + ":";
      for (const NodeWeights& n : plan_.nodes) {
        size_t shared = 0;
        for (const WeightPiece& p : n.pieces)
          if (p.split == WeightSplit::Replicated) shared += p.bytes;
        line += " node " + std::to_string(n.node) + " " + gb(n.bytes) +
                (n.home ? " (the loaded weights, in place);"
                        : " (copies: " + gb(shared) + " read by all ranks, " +
                              gb(n.bytes - shared) + " shards);");
      }
      char took[32];
      std::snprintf(took, sizeof took, " (placed in %.3f s)",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      line.pop_back();
      log_line(line + took);
    }
    return views;
  } catch (const std::exception& e) {
    log_line(what + ": not placed (" + e.what() + ")");
    return unplaced;
  }
}

void PlacedWeights::copy_missing(const Model& model, const NodeWeights& node, bool bind) {
  std::vector<const WeightPiece*> missing;
  size_t bytes = 0;
  for (const WeightPiece& p : node.pieces)
    if (!copies_.count({node.node, p.tensor, p.range.begin, p.range.end})) {
      missing.push_back(&p);
      bytes += (p.bytes + kAlign - 1) / kAlign * kAlign;
    }
  if (missing.empty()) return;
  SharedRegion region("sandwich-weights-node" + std::to_string(node.node), bytes,
                      SharedRegion::Kind::Fork);
  // Bound before the first touch: the copying threads may run on any node.
  if (bind) bind_to_node(region.data(), region.size(), node.node, false);
  const ModelConfig& c = model.config;
  ModelWeights loaded = model.weights();
  const std::vector<Slot> from = slots(loaded, c, storage_->layers);
  const std::vector<WeightTensor> tensors = weight_tensors(c, *storage_);
  std::vector<Chunk> chunks;
  std::vector<std::pair<PieceKey, void*>> made;
  for (const WeightPiece* p : missing) {
    const size_t i = static_cast<size_t>(
        std::find_if(tensors.begin(), tensors.end(),
                     [&](const WeightTensor& t) { return t.name == p->tensor; }) -
        tensors.begin());
    void* dst = region.allocate(p->bytes, kAlign);
    piece_copies(chunks, from.at(i), *p, dst);
    made.push_back({{node.node, p->tensor, p->range.begin, p->range.end}, dst});
  }
  const int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  kernels::ThreadTeam team(threads);
  team.parallel_for(static_cast<int64_t>(chunks.size()), [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) std::memcpy(chunks[i].dst, chunks[i].src, chunks[i].bytes);
  });
  regions_.push_back(std::move(region));
  copies_.insert(made.begin(), made.end());
}

const ModelWeights& PlacedWeights::view(const Model& model, int node, int rank, int n_ranks) {
  auto& v = views_[{node, n_ranks, rank}];
  if (v) return *v;
  const ModelConfig& c = model.config;
  auto w = std::make_unique<ModelWeights>(model.weights());
  const std::vector<Slot> to = slots(*w, c, storage_->layers);
  const std::vector<WeightTensor> tensors = weight_tensors(c, *storage_);
  const RankShards shards = rank_shards(c, tensors, rank, n_ranks);
  const NodeWeights& placed = *plan_.find(node);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WeightPiece p = rank_piece(tensors[i], shards);
    // The node's piece may be wider than the rank's (merged with other ranks' and
    // configurations'): the rank's part starts inside it.
    const WeightPiece& held = *placed.holding(p);
    auto* data =
        static_cast<uint8_t*>(copies_.at({node, held.tensor, held.range.begin, held.range.end}));
    if (to[i].vector) {
      *to[i].vector = reinterpret_cast<const float*>(data);
      continue;
    }
    kernels::PackedWeight& m = *to[i].matrix;
    if (p.split == WeightSplit::Columns) {
      data += (p.range.begin - held.range.begin) / m.panel * m.panel_bytes();
      m.n = p.range.size();
      m.bytes = p.bytes;
    } else if (p.split == WeightSplit::KRange && held.range.size() != m.k) {
      // The piece as the matrix it was copied as, read from the rank's first K column on: the
      // forward pass reads K [0, its width) of a part narrower than the matrix, through the
      // GEMM's own K range, so the panels keep the piece's stride.
      m = kernels::plan_packed_like(m, m.n, held.range.size());
      data += kernels::panel_k_bytes(m, 0, p.range.begin - held.range.begin, m.k).offset;
    }
    m.data = data;
  }
  if (c.tied_embeddings && model.has_embedding() && model.has_head()) w->output = w->embedding;
  v = std::move(w);
  return *v;
}

}  // namespace sandwich::engine
