// sandwich-model: make dummy-weight GGUF files, describe model files, and run tokenizers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/tool.h"
#include "engine/formats/dummy_model.h"
#include "engine/formats/model.h"
#include "engine/formats/model_file_report.h"
#include "engine/formats/quantize_model.h"
#include "engine/text/token_id_list.h"

using namespace sandwich;
using namespace sandwich::engine;

namespace {

int cmd_make(int argc, char** argv, int first) {
  std::string preset, out, dtype = "bf16";
  std::optional<std::string> vocab_file;
  std::optional<uint64_t> seed;
  ArgParser p("sandwich-model make", "Write a dummy-weight GGUF file for a model preset.");
  p.add("--preset", &preset,
        "model preset (configs/models/<P>.json) or a config.json / model file for its shapes", "P");
  p.add("--dtype", &dtype,
        "matrix element type: bf16 (default), f32, or a llama.cpp quantization preset (" +
            quant_preset_names() + ")",
        "D");
  p.add("-o,--output", &out, "output GGUF path", "FILE");
  p.add("--vocab", &vocab_file,
        "take the vocabulary from this tokenizer (default: a synthetic one)", "T");
  p.add("--seed", &seed,
        "weight seed (default 0; the same seed as --weights-seed gives the same weights)");
  if (!p.parse(argc, argv, first)) return 0;
  if (preset.empty() || out.empty()) throw CliError("make needs --preset and -o (see --help)");
  const auto preset_q = quant_preset(dtype);
  if (dtype != "bf16" && dtype != "f32" && !preset_q)
    throw CliError("--dtype must be bf16, f32 or one of " + quant_preset_names() + ", got '" +
                   dtype + "'");
  const ModelConfig c =
      std::filesystem::exists(preset) ? read_model_config(preset) : load_preset(preset);
  Vocab vocab = vocab_file ? vocab_from_tokenizer_file(*vocab_file) : default_dummy_vocab(c);
  pad_dummy_vocab(vocab, c);
  if (preset_q) {
    write_dummy_gguf_quantized(c, *preset_q, vocab, seed.value_or(0), out);
  } else {
    const WeightDType dt = dtype == "f32" ? WeightDType::F32 : WeightDType::BF16;
    write_dummy_gguf(c, dt, vocab, seed.value_or(0), out);
  }
  std::cerr << "wrote " << out << " (" << c.name << ", " << dtype << ", "
            << static_cast<double>(std::filesystem::file_size(out)) / (1 << 30) << " GiB)\n";
  return 0;
}

int cmd_quantize(int argc, char** argv, int first) {
  bool quiet = false;
  ArgParser p("sandwich-model quantize IN OUT TYPE [THREADS]",
              "Write a model (F32/F16/BF16 or quantized GGUF, Hugging Face safetensors, llama2.c) "
              "as a GGUF quantized with a llama.cpp preset: " +
                  quant_preset_names() +
                  " (q4_k and q5_k put every matrix in that type; the _m/_s presets mix types "
                  "per tensor as llama.cpp does; a tensor whose rows no block of q4_0 ... q8_0 "
                  "fits stays f32, where llama-quantize refuses it), or unquantized: f32, f16, "
                  "bf16 (every matrix in that type, as llama-quantize writes them).");
  // A fourth word is llama-quantize's thread count.
  p.accept_positionals(4);
  std::optional<std::string> tokenizer;
  int threads = 0;
  p.add_flag("-q,--quiet", &quiet, "do not list the tensors");
  p.add("-t,--threads", &threads, "threads that quantize (default: every core)");
  p.add("--tokenizer", &tokenizer,
        "vocabulary for an input without one of its own (a GGUF input keeps its own)", "T");
  if (!p.parse(argc, argv, first)) return 0;
  if (p.positional().size() < 3)
    throw CliError("quantize takes IN OUT TYPE [THREADS] (see --help)");
  const std::string in = p.positional()[0], out = p.positional()[1], type = p.positional()[2];
  if (p.positional().size() == 4)
    threads = static_cast<int>(
        std::clamp<int64_t>(ArgParser::parse_int("THREADS", p.positional()[3]), -1, 1 << 16));
  if (threads < 0) throw CliError("--threads must not be negative (0: every core)");
  auto preset = quant_preset(type);
  if (!preset) preset = plain_preset(type);
  if (!preset)
    throw CliError("unknown quantization type '" + type + "' (one of " + quant_preset_names() +
                   ", or f32, f16, bf16)");
  if (!std::filesystem::exists(in)) throw CliError(in + ": no such file or folder");
  const auto t0 = std::chrono::steady_clock::now();
  quantize_model_file(in, out, *preset, quiet ? nullptr : &std::cerr,
                      tokenizer ? std::optional<std::filesystem::path>(*tokenizer) : std::nullopt,
                      threads);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ModelFileInfo info = inspect_model(out);
  // The file as it lies on disk (header, metadata and padding too), beside the tensors' bytes.
  const uintmax_t file_bytes = std::filesystem::file_size(out);
  char line[160];
  std::snprintf(line, sizeof line, "%ju bytes on disk (%.2f MiB); tensors %ju bytes, ", file_bytes,
                static_cast<double>(file_bytes) / (1 << 20), static_cast<uintmax_t>(info.bytes));
  std::cerr << "wrote " << out << " (" << preset->name << "): " << line
            << bits_per_weight(info.bytes, weight_count(info)) << " bits per weight; " << std::fixed
            << std::setprecision(1) << seconds << " s\n";
  return 0;
}

int cmd_info(int argc, char** argv, int first) {
  bool summary = false;
  ArgParser p("sandwich-model info FILE", "Describe a model file or folder (headers only).");
  p.accept_positionals(1);
  p.add_flag("--summary", &summary,
             "leave out the list of tensors (name, shape, type, bits per weight)");
  if (!p.parse(argc, argv, first)) return 0;
  if (p.positional().size() != 1) throw CliError("info takes one model path");
  print_model_report(p.positional()[0], !summary, std::cout);
  return 0;
}

int cmd_tokenize(int argc, char** argv, int first) {
  std::string tokenizer, text;
  bool no_bos = false, special = false;
  ArgParser p("sandwich-model tokenize", "Print the token ids of a text.");
  p.add("--tokenizer", &tokenizer,
        "tokenizer file or model (GGUF, tokenizer.model, tokenizer.json, tokenizer.bin, HF folder)",
        "T");
  p.add("--text", &text, "text to encode");
  p.add_flag("--no-bos", &no_bos, "do not prepend BOS");
  p.add_flag("--special", &special, "parse special-token strings such as <|eot_id|>");
  if (!p.parse(argc, argv, first)) return 0;
  if (tokenizer.empty()) throw CliError("tokenize needs --tokenizer");
  auto tok = load_tokenizer(tokenizer);
  auto ids = tok->encode(text, !no_bos && tok->add_bos_default(), special);
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  return 0;
}

int cmd_detokenize(int argc, char** argv, int first) {
  std::string tokenizer, ids_text;
  bool keep_special = false;
  ArgParser p("sandwich-model detokenize", "Print the text of token ids.");
  p.add("--tokenizer", &tokenizer, "tokenizer file or model", "T");
  p.add("--ids", &ids_text, "token ids separated by spaces or commas", "IDS");
  p.add_flag("--keep-special", &keep_special, "print special tokens too");
  if (!p.parse(argc, argv, first)) return 0;
  if (tokenizer.empty()) throw CliError("detokenize needs --tokenizer");
  auto tok = load_tokenizer(tokenizer);
  const std::vector<int32_t> ids = parse_token_ids(ids_text, tok->vocab_size(), "--ids");
  std::cout << tok->decode(ids, keep_special) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Subcommand commands[] = {
      {"make",
       "--preset P --dtype bf16|f32|q4_k_m|q8_0|... -o FILE.gguf [--vocab TOKENIZER] [--seed N]",
       "write a GGUF with random weights and the preset's real shapes (llama.cpp loads it too)",
       cmd_make},
      {"info", "FILE [--summary]",
       "architecture, shapes, tensor types, bits per weight and size of a model", cmd_info},
      {"quantize", "IN OUT TYPE [THREADS] [-t N] [--tokenizer T] [-q]",
       "write a model as a GGUF quantized with a llama.cpp preset (q4_k_m, q8_0, ...) or in "
       "f32, f16, bf16",
       cmd_quantize},
      {"tokenize", "--tokenizer T --text S [--no-bos] [--special]",
       "print the token ids of S, space-separated", cmd_tokenize},
      {"detokenize", "--tokenizer T --ids \"1 2 3\" [--keep-special]", "print the text of the ids",
       cmd_detokenize}};
  return run_subcommands("sandwich-model", commands, argc, argv);
}
