#pragma once
// Token ids as people type them: "1 2 3" or "1,2,3".
#include <cstdint>
#include <string>
#include <vector>

namespace sandwich::engine {

// The ids of `text`, separated by spaces, commas, tabs or newlines. Throws CliError naming
// `flag` for what is no number, and for an id outside a vocabulary of vocab_size.
std::vector<int32_t> parse_token_ids(const std::string& text, int32_t vocab_size,
                                     const std::string& flag);

}  // namespace sandwich::engine
