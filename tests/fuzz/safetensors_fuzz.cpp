// A safetensors file (its JSON header and the tensors it points at) beside a fixed, tiny
// config.json; a small enough model goes through the whole load.
#include <exception>
#include <fstream>

#include "model_fuzz_load.h"

namespace {

// One layer of width 8: the shapes of the seed corpus's tensors.
constexpr const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
  "num_key_value_heads": 1, "vocab_size": 16, "max_position_embeddings": 32,
  "rms_norm_eps": 1e-05, "tie_word_embeddings": true})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  static const bool config_written = [] {
    std::ofstream(fuzz::scratch_dir() / "config.json") << kConfig;
    return true;
  }();
  (void)config_written;
  const auto path = fuzz::write_input("model.safetensors", data, size);
  try {
    fuzz::load_if_small(engine::read_safetensors(path), path);
  } catch (const std::exception&) {
  }
  return 0;
}
