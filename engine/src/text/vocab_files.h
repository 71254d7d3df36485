#pragma once
// Readers of tokenizer files into vocabularies (private to engine/).
#include <filesystem>

#include "engine/text/tokenizer.h"

namespace sandwich::engine {

bool looks_like_tiktoken(const std::filesystem::path& path);
Vocab vocab_from_llama2c(const std::filesystem::path& path);
// with_merges derives the merges list (needed to write a GGUF llama.cpp reads; slow-ish).
Vocab vocab_from_tiktoken(const std::filesystem::path& path, bool with_merges);
Vocab vocab_from_tokenizer_json(const std::filesystem::path& path);
Vocab vocab_from_sentencepiece(const std::filesystem::path& path);
// Appends Llama-3's special tokens (<|begin_of_text|> ... <|eot_id|>, then reserved ones) and
// makes the first BOS, the second EOS and <|eot_id|> the end of turn.
void append_llama3_special_tokens(Vocab& v, int count);

}  // namespace sandwich::engine
