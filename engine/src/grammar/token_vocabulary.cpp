#include <algorithm>
#include <limits>
#include <numeric>

#include "engine/grammar/grammar.h"
#include "engine/text/tokenizer.h"
#include "grammar/token_trie.h"

namespace sandwich::engine::grammar {
namespace {

// A normal token to stand before each piece, so that a SentencePiece vocabulary gives a token's
// bytes as they are mid-text (its leading space kept), where the grammar sees them.
int32_t mid_text_predecessor(const Tokenizer& tok) {
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    if (!tok.is_special(id) && id != tok.bos_id()) return id;
  return -1;
}

}  // namespace

TokenVocabulary::TokenVocabulary(const Tokenizer& tok) : impl_(std::make_unique<Impl>()) {
  Impl& v = *impl_;
  const int32_t n = tok.vocab_size();
  v.vocab_size = n;
  v.offsets.reserve(static_cast<size_t>(n) + 1);
  v.in_trie.assign(n, false);
  const int32_t prev = mid_text_predecessor(tok);
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n; ++id) {
    v.offsets.push_back(static_cast<uint32_t>(v.bytes.size()));
    if (tok.is_special(id)) continue;
    std::string piece = tok.piece(id, prev);
    if (piece.empty() || piece.size() > std::numeric_limits<uint16_t>::max()) continue;
    v.bytes += piece;
    v.in_trie[id] = true;
    order.push_back(id);
  }
  v.offsets.push_back(static_cast<uint32_t>(v.bytes.size()));
  // Sorted byte strings are the trie's preorder: a node's own token comes before its extensions.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    auto x = v.token_bytes(a), y = v.token_bytes(b);
    return x != y ? x < y : a < b;
  });
  std::vector<int32_t> path;  // open nodes, one per byte of the previous token
  std::string_view last;
  auto close_to = [&](size_t depth) {
    while (path.size() > depth) {
      v.nodes[path.back()].skip = static_cast<int32_t>(v.nodes.size());
      path.pop_back();
    }
  };
  for (int32_t id : order) {
    std::string_view s = v.token_bytes(id);
    size_t common = 0;
    while (common < s.size() && common < last.size() && s[common] == last[common]) ++common;
    close_to(common);
    for (size_t k = common; k < s.size(); ++k) {
      path.push_back(static_cast<int32_t>(v.nodes.size()));
      v.nodes.push_back({static_cast<uint8_t>(s[k]), 0, static_cast<uint16_t>(k + 1), 0, n,
                         static_cast<int32_t>(v.token_ids.size())});
    }
    TrieNode& end = v.nodes[path.back()];
    if (end.token == n)
      end.token = id;
    else
      end.more_tokens = 1;
    v.token_ids.push_back(id);
    v.max_depth = std::max<int32_t>(v.max_depth, static_cast<int32_t>(s.size()));
    last = s;
  }
  close_to(0);
  v.nodes.push_back({0, 0, 0, static_cast<int32_t>(v.nodes.size()) + 1, n,
                     static_cast<int32_t>(v.token_ids.size())});
}

TokenVocabulary::~TokenVocabulary() = default;

int32_t TokenVocabulary::size() const {
  return impl_->vocab_size;
}

}  // namespace sandwich::engine::grammar
