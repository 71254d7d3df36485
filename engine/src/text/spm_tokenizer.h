#pragma once
// Factories of the tokenizer implementations (private to engine/).
#include <memory>
#include <vector>

#include "engine/text/tokenizer.h"

namespace sandwich::engine {

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, std::vector<int32_t> extra_stop_ids = {});
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab v);
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::filesystem::path& model_file);

}  // namespace sandwich::engine
