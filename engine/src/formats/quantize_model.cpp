// `sandwich-model quantize`: any model the loader reads, written as a quantized GGUF.
#include "engine/formats/quantize_model.h"

#include <set>
#include <sstream>
#include <stdexcept>

#include "engine/formats/gguf.h"
#include "formats/gguf_llama_layout.h"
#include "formats/gguf_tensor_rows.h"
#include "formats/model_source.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

namespace sandwich::engine {
namespace {

// Keys of the input file that describe its tensors' encoding rather than the model.
const std::set<std::string> kEncodingKeys = {"general.file_type", "general.quantization_version",
                                             "general.alignment"};

std::string shape_str(int64_t rows, int64_t cols) {
  return cols ? std::to_string(rows) + " x " + std::to_string(cols) : std::to_string(rows);
}

// Source row s of a tensor as f32 values.
void source_row(const SourceTensor& t, int64_t s, int64_t width, float* dst) {
  if (t.qtype) {
    const auto& info = kernels::qtype_info(*t.qtype);
    const auto* base = static_cast<const uint8_t*>(t.data);
    kernels::dequantize_ref(*t.qtype, base + s * (width / info.block_elems) * info.block_bytes, dst,
                            width);
    return;
  }
  for (int64_t c = 0; c < width; ++c)
    dst[c] = kernels::load_as_f32(t.data, static_cast<size_t>(s * width + c), t.dtype);
}

}  // namespace

void quantize_model_file(const std::filesystem::path& in, const std::filesystem::path& out,
                         const QuantPreset& preset, std::ostream* log,
                         const std::optional<std::filesystem::path>& tokenizer, int threads) {
  ModelSource src = read_model_source(in);
  const ModelConfig& c = src.config;
  gguf::Writer w;
  if (detect_format(in) == FileFormat::GGUF) {
    // The input's own metadata (tokenizer, chat template, rope scaling) carries over.
    gguf::Reader r(in);
    for (const auto& [key, value] : r.metadata())
      if (!kEncodingKeys.count(key)) w.set(key, value);
    w.set("general.file_type", gguf::Value::of_u32(preset.file_type));
  } else {
    Vocab vocab;
    if (tokenizer)
      vocab = vocab_from_tokenizer_file(*tokenizer);
    else if (src.vocab)
      vocab = *src.vocab;
    else if (src.tokenizer_path)
      vocab = vocab_from_tokenizer_file(*src.tokenizer_path);
    else
      throw std::runtime_error(in.string() + ": no tokenizer found (looked in " +
                               src.tokenizer_searched +
                               "); the GGUF file needs one: pass --tokenizer");
    set_llama_metadata(c, vocab, preset.file_type, w);
  }
  w.set("general.quantization_version", gguf::Value::of_u32(2));

  // The listing comes after the file is written: the tensors are quantized at write time, and an
  // error there should be the only thing said.
  std::ostringstream listing;
  const bool has_output = src.tensors.count("output.weight") != 0;
  ModelConfig layout = c;
  layout.tied_embeddings = !has_output;
  for (const auto& spec : llama_tensor_specs(layout)) {
    auto it = src.tensors.find(spec.name);
    if (it == src.tensors.end())
      throw std::runtime_error(in.string() + ": tensor '" + spec.name + "' is missing");
    const SourceTensor& t = it->second;
    const std::vector<int64_t> want =
        spec.cols ? std::vector<int64_t>{spec.rows, spec.cols} : std::vector<int64_t>{spec.rows};
    if (t.shape != want)
      throw std::runtime_error(in.string() + ": tensor '" + spec.name + "' is not " +
                               shape_str(spec.rows, spec.cols) + " as the config says");
    const int64_t width = spec.cols ? spec.cols : spec.rows;
    const uint32_t type =
        preset_tensor_type(preset, spec.name, width, spec.cols ? 2 : 1, c, has_output);
    const bool permute = spec.rope_rows && src.rope_layout == RopeLayout::RotateHalf;
    const int64_t hd = c.head_dim;
    add_tensor_rows(
        w, spec.name, type, spec.rows, spec.cols,
        [&t, width, permute, hd](int64_t r0, int64_t r1, float* dst) {
          for (int64_t f = r0; f < r1; ++f)
            source_row(t, permute ? rotate_half_row(f, hd) : f, width, dst + (f - r0) * width);
        },
        threads);
    listing << spec.name << " [" << shape_str(spec.rows, spec.cols) << "] " << source_type_name(t)
            << " -> " << gguf::tensor_type_name(type) << "\n";
  }
  if (!c.rope_freq_factors.empty()) {
    const auto& f = c.rope_freq_factors;
    add_tensor_rows(w, "rope_freqs.weight", 0, std::ssize(f), 0,
                    [&f](int64_t, int64_t, float* dst) { std::copy(f.begin(), f.end(), dst); });
  }
  write_atomically(w, out);
  if (log) *log << listing.str();
}

}  // namespace sandwich::engine
