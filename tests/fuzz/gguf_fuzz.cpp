// GGUF files: the reader, the model reader on top of it, the embedded vocabulary and, for a
// small enough model, the whole load.
#include <exception>

#include "engine/formats/gguf.h"
#include "model_fuzz_load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("model.gguf", data, size);
  try {
    const engine::gguf::Reader r(path);
    for (const auto& t : r.tensors()) (void)t.elements();
    try {
      fuzz::exercise_tokenizer(*engine::make_tokenizer(engine::vocab_from_gguf(r)));
    } catch (const std::exception&) {
    }
    fuzz::load_if_small(engine::read_gguf(path), path);
  } catch (const std::exception&) {
  }
  return 0;
}
