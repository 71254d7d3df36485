// Hugging Face tokenizer.json files (BPE, byte-level or SentencePiece-style), read into a
// vocabulary and used as a tokenizer.
#include <exception>

#include "fuzz_support.h"
#include "text/vocab_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("tokenizer.json", data, size);
  try {
    fuzz::exercise_tokenizer(*engine::make_tokenizer(engine::vocab_from_tokenizer_json(path)));
  } catch (const std::exception&) {
  }
  return 0;
}
