// llama2.c tokenizer.bin files, read into a vocabulary and used as a tokenizer.
#include <exception>

#include "fuzz_support.h"
#include "text/vocab_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("tokenizer.bin", data, size);
  try {
    fuzz::exercise_tokenizer(*engine::make_tokenizer(engine::vocab_from_llama2c(path)));
  } catch (const std::exception&) {
  }
  return 0;
}
