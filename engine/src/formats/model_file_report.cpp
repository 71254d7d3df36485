#include "engine/formats/model_file_report.h"

#include <cstdio>
#include <map>
#include <ostream>
#include <utility>

#include "engine/text/tokenizer.h"

namespace sandwich::engine {
namespace {

// The tokenizer the tools would find next to the model, in brief.
std::string tokenizer_note(const std::filesystem::path& path) {
  try {
    auto tok = load_tokenizer(std::filesystem::is_directory(path) || path.extension() == ".gguf"
                                  ? path
                                  : path.parent_path() / "tokenizer.bin");
    return std::to_string(tok->vocab_size()) + " tokens, BOS " + std::to_string(tok->bos_id()) +
           ", EOS " + std::to_string(tok->eos_id());
  } catch (const std::exception&) {
    return "none found (pass --tokenizer to the tools)";
  }
}

// "bits/weight:   4.50 (f32 32.00 on 100 weights, q4_k 4.50 on ...)".
void print_bits_per_weight(const ModelFileInfo& info, std::ostream& out) {
  std::map<std::string, std::pair<uint64_t, int64_t>> by_type;  // bytes, elements
  for (const auto& t : info.tensors) {
    by_type[t.type].first += t.bytes;
    by_type[t.type].second += t.elements;
  }
  out << "bits/weight:   " << bits_per_weight(info.bytes, weight_count(info)) << " (";
  bool first_type = true;
  for (auto& [type, be] : by_type) {
    out << (first_type ? "" : ", ") << type << " " << bits_per_weight(be.first, be.second) << " on "
        << be.second << " weights";
    first_type = false;
  }
  out << ")\n";
}

void print_tensors(const ModelFileInfo& info, std::ostream& out) {
  out << "tensors (name, shape, type, bits per weight):\n";
  for (const auto& t : info.tensors) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i)
      shape += (i ? " x " : "") + std::to_string(t.shape[i]);
    out << "  " << t.name << "  [" << shape << "]  " << t.type << "  "
        << bits_per_weight(t.bytes, t.elements) << "\n";
  }
}

}  // namespace

std::string bits_per_weight(uint64_t bytes, int64_t elements) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f",
                elements ? 8.0 * static_cast<double>(bytes) / static_cast<double>(elements) : 0.0);
  return buf;
}

int64_t weight_count(const ModelFileInfo& info) {
  int64_t elements = 0;
  for (const auto& t : info.tensors) elements += t.elements;
  return elements;
}

void print_model_report(const std::filesystem::path& path, bool list_tensors, std::ostream& out) {
  const ModelFileInfo info = inspect_model(path);
  const ModelConfig& c = info.config;
  const std::string tokenizer = tokenizer_note(path);
  out << "file:          " << path.string() << "\n"
      << "format:        " << info.description << "\n"
      << "architecture:  llama\n"
      << "name:          " << c.name << "\n"
      << "dim:           " << c.dim << "\n"
      << "layers:        " << c.n_layers << "\n"
      << "heads:         " << c.n_heads << " (kv " << c.n_kv_heads << ", head size " << c.head_dim
      << ")\n"
      << "ffn:           " << c.ffn_dim << "\n"
      << "vocab:         " << c.vocab_size << "\n"
      << "context:       " << c.max_seq_len << "\n"
      << "rope theta:    " << c.rope_theta << "\n"
      << "norm eps:      " << c.norm_eps << "\n"
      << "tied output:   " << (c.tied_embeddings ? "yes" : "no") << "\n"
      << "parameters:    " << c.param_count() << "\n"
      << "tensors:       " << info.n_tensors << "\n"
      << "dtypes:       ";
  for (auto& [name, n] : info.dtypes) out << " " << name << " x" << n;
  out << "\n";
  print_bits_per_weight(info, out);
  out << "size:          " << info.bytes << " bytes ("
      << static_cast<double>(info.bytes) / (1 << 30) << " GiB)\n"
      << "tokenizer:     " << tokenizer << "\n";
  if (list_tensors) print_tensors(info, out);
}

}  // namespace sandwich::engine
