#pragma once
// What `sandwich-model info` says of a model file or folder, from its headers only: the shape,
// the tensor types, bits per weight, size and tokenizer.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>

#include "engine/formats/model.h"

namespace sandwich::engine {

// "4.50": bits per weight of `bytes` holding `elements` weights ("0.00" for none).
std::string bits_per_weight(uint64_t bytes, int64_t elements);
// The weights of all the file's tensors.
int64_t weight_count(const ModelFileInfo& info);

// The report, a "name:   value" line each; with list_tensors, then every tensor's name, shape,
// type and bits per weight. Throws as inspect_model does for a file that is no model.
void print_model_report(const std::filesystem::path& path, bool list_tensors, std::ostream& out);

}  // namespace sandwich::engine
