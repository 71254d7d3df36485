#pragma once
// The model-loading options every tool shares: --model, --tokenizer, --load-format, --dtype.
#include "common/cli.h"
#include "engine/model.h"

namespace sandwich {

void add_model_options(ArgParser& p, LoadOptions& o);

}  // namespace sandwich
