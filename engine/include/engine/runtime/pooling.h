#pragma once
// How an embedding is made of a prompt's final hidden states (after the final norm), as
// llama-server's --pooling names it: their mean, or the last token's. Either is then scaled to
// unit L2 norm (llama-server's default --embd-normalize).
#include <span>
#include <string_view>
#include <vector>

#include "common/enum_names.h"

namespace sandwich::engine {

enum class Pooling { Mean, Last };

inline constexpr EnumName<Pooling> kPoolingNames[] = {{Pooling::Mean, "mean"},
                                                      {Pooling::Last, "last"}};
constexpr std::string_view pooling_name(Pooling p) {
  return name_of(p, kPoolingNames);
}

// `pooled` (the sum of `count` tokens' hidden states for Mean, the last one's for Last) divided
// by its L2 norm; the division by the count of a mean cancels out. All zeros stay zeros.
std::vector<float> normalized_embedding(std::span<const double> pooled);

}  // namespace sandwich::engine
