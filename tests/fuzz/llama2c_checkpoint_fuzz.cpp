// llama2.c checkpoints (the legacy fp32 export): the header checks and, for a small enough
// model, the whole load.
#include <exception>

#include "model_fuzz_load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("checkpoint.bin", data, size);
  try {
    fuzz::load_if_small(engine::read_llama2c(path), path);
  } catch (const std::exception&) {
  }
  return 0;
}
