#pragma once
// TokenVocabulary::Impl: every token's bytes, and a byte trie of them laid out in preorder for a
// depth-first walk over plain arrays: a subtree is the run of nodes up to its `skip`, so a walk
// that finds no parse after a node jumps past everything under it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sandwich::engine::grammar {

struct TrieNode {
  uint8_t byte;
  uint8_t more_tokens;  // 1: other tokens with the same bytes (SentencePiece's byte tokens)
  uint16_t depth;       // 1 for a token's first byte
  int32_t skip;         // the node after this one's subtree
  // The token ending here, or the vocabulary size (a bit past every token's, so that the walk
  // sets it without a branch).
  int32_t token;
  int32_t tok_begin;  // all tokens ending here: token_ids[tok_begin, next node's tok_begin)
};

struct TokenVocabulary::Impl {
  int32_t vocab_size = 0;
  // Token i adds bytes[offsets[i], offsets[i + 1]); tokens left out of the trie add nothing.
  std::vector<uint32_t> offsets;
  std::string bytes;
  std::vector<bool> in_trie;
  // Preorder nodes, then one sentinel (depth 0) whose tok_begin ends the last node's tokens.
  std::vector<TrieNode> nodes;
  std::vector<int32_t> token_ids;
  int32_t max_depth = 0;

  std::string_view token_bytes(int32_t id) const {
    return std::string_view(bytes).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
};

}  // namespace sandwich::engine::grammar
