#pragma once
// Where a tensor's data starts in a GGUF file that sandwich wrote, for tests (and fuzz seeds)
// that damage one block of it.
#include <cstddef>
#include <filesystem>
#include <string>

#include "engine/formats/gguf.h"

namespace sandwich::test {

// File position of a tensor's data (the writer pads every tensor, the last one too, to 32).
inline size_t tensor_data_pos(const std::filesystem::path& p, const std::string& name) {
  engine::gguf::Reader r(p);
  const engine::gguf::TensorInfo* last = nullptr;
  for (const auto& t : r.tensors())
    if (!last || t.offset > last->offset) last = &t;
  const uint64_t data_start = r.file_size() - (last->offset + (last->nbytes + 31) / 32 * 32);
  return static_cast<size_t>(data_start + r.find_tensor(name)->offset);
}

}  // namespace sandwich::test
