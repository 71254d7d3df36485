#include "engine/model_options.h"

namespace sandwich {

void add_model_options(ArgParser& p, LoadOptions& o) {
  p.add("-m,--model", &o.model,
        "model: a GGUF file, a Hugging Face folder, a llama2.c .bin, or a preset name "
        "(llama-160m, llama-1.3b, llama3-8b) looked up under $SANDWICH_MODELS",
        "M");
  p.option("--tokenizer", "T", "tokenizer file or folder (default: the model's own)",
           [&o](const std::string& v) { o.tokenizer = v; });
  p.option("--load-format", "F", "auto (default) or dummy: random weights with the model's shapes",
           [&o](const std::string& v) {
             if (v == "auto")
               o.load_format = LoadFormat::Auto;
             else if (v == "dummy")
               o.load_format = LoadFormat::Dummy;
             else
               throw CliError("--load-format must be auto or dummy, got '" + v + "'");
           });
  p.option("--dtype", "D", "weight storage: auto (default), float32 or bfloat16",
           [&o](const std::string& v) {
             if (v == "auto")
               o.dtype = WeightDType::Auto;
             else if (v == "float32" || v == "f32" || v == "float")
               o.dtype = WeightDType::F32;
             else if (v == "bfloat16" || v == "bf16")
               o.dtype = WeightDType::BF16;
             else
               throw CliError("--dtype must be auto, float32 or bfloat16, got '" + v + "'");
           });
}

}  // namespace sandwich
