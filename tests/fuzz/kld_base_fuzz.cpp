// KL-divergence base files (sandwich-perplexity --kl-divergence-base FILE --kl-divergence): the
// header, the text's tokens and every chunk's rows, checked against the file's size.
#include <exception>

#include "engine/scoring/kld_base_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  const auto path = fuzz::write_input("base.kld", data, size);
  try {
    engine::KLDBaseReader r(path);
    float sum = 0;
    for (int32_t i = 0; i < r.info().n_chunks; ++i)
      for (float v : r.chunk(i)) sum += v;
    (void)sum;
  } catch (const std::exception&) {
  }
  return 0;
}
