#pragma once
// The model-loading options every tool shares: --model, --tokenizer, --load-format, --dtype.
#include "engine/cli_args.h"
#include "engine/model.h"

namespace sandwich {

void add_model_options(ArgParser& p, LoadOptions& o);

}  // namespace sandwich
