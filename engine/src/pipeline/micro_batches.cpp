#include <algorithm>

#include "pipeline/pipeline_impl.h"

namespace sandwich::engine {
namespace {

bool decode_step(std::span<const BatchEntry> batch) {
  return std::all_of(batch.begin(), batch.end(),
                     [](const BatchEntry& e) { return e.tokens.size() == 1; });
}

// Below this many tokens a prefill piece's GEMMs lose more to their small M than the overlap of
// the nodes gains.
constexpr int64_t kMinPieceTokens = 32;
constexpr int kMaxPiecesPerNode = 16;

}  // namespace

int auto_micro_batches(std::span<const BatchEntry> batch, int nodes) {
  if (decode_step(batch)) return std::min<int>(nodes, static_cast<int>(batch.size()));
  int64_t tokens = 0;
  for (const BatchEntry& e : batch) tokens += static_cast<int64_t>(e.tokens.size());
  // M pieces over P nodes keep the nodes busy M / (M + P - 1) of the step.
  return static_cast<int>(
      std::clamp<int64_t>(tokens / kMinPieceTokens, 1, int64_t{kMaxPiecesPerNode} * nodes));
}

std::vector<std::vector<BatchEntry>> cut_micro_batches(std::span<const BatchEntry> batch,
                                                       int pieces) {
  std::vector<std::vector<BatchEntry>> out;
  if (batch.empty()) return out;
  pieces = std::max(1, pieces);
  int64_t tokens = 0;
  for (const BatchEntry& e : batch) tokens += static_cast<int64_t>(e.tokens.size());
  if (pieces == 1 || tokens <= 1) {
    out.emplace_back(batch.begin(), batch.end());
    return out;
  }
  if (decode_step(batch)) {
    // Sequences in `pieces` runs of near-equal length.
    const int64_t n = static_cast<int64_t>(batch.size());
    pieces = static_cast<int>(std::min<int64_t>(pieces, n));
    for (int p = 0; p < pieces; ++p)
      out.emplace_back(batch.begin() + n * p / pieces, batch.begin() + n * (p + 1) / pieces);
    return out;
  }
  const int64_t target = (tokens + pieces - 1) / pieces;
  std::vector<BatchEntry> cur;
  int64_t cur_tokens = 0;
  auto close = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
    cur_tokens = 0;
  };
  for (const BatchEntry& e : batch) {
    const bool cuttable = !e.all_logits && e.hidden == HiddenOutput::None;
    int64_t done = 0;
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    while (done < n) {
      const int64_t room = target - cur_tokens;
      const int64_t take = cuttable ? std::min(n - done, std::max<int64_t>(room, 1)) : n;
      BatchEntry piece = e;
      piece.tokens = e.tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(take));
      piece.start_pos = e.start_pos + static_cast<int32_t>(done);
      const bool last_piece = done + take == n;
      piece.want_logits = last_piece && e.want_logits;
      cur.push_back(piece);
      cur_tokens += take;
      done += take;
      if (cur_tokens >= target) close();
    }
  }
  close();
  return out;
}

}  // namespace sandwich::engine
