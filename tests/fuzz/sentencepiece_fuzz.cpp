// SentencePiece .model files: through libsentencepiece (as load_tokenizer runs them) and as the
// vocabulary that sandwich-model embeds in a GGUF.
#include <exception>

#include "fuzz_support.h"
#include "text/spm_tokenizer.h"
#include "text/vocab_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("tokenizer.model", data, size);
  try {
    fuzz::exercise_tokenizer(*engine::make_sentencepiece_tokenizer(path));
  } catch (const std::exception&) {
  }
  try {
    fuzz::exercise_tokenizer(*engine::make_tokenizer(engine::vocab_from_sentencepiece(path)));
  } catch (const std::exception&) {
  }
  return 0;
}
