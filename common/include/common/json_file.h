#pragma once
// Reading and writing a JSON file with errors that name it.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_kinds.h"

namespace sandwich {

// Throws std::runtime_error naming the file and its kind when it is missing, a directory, a
// device, larger than the kind's limit (read_bounded_file), unreadable or not valid JSON.
nlohmann::json read_json_file(const std::filesystem::path& p, const FileKind& kind);
// Writes `j` (dump(indent)) atomically: a reader, or a crash, never sees half a file, since it
// is written beside `p` and renamed over it. Throws std::runtime_error naming the file.
void write_json_file(const nlohmann::json& j, const std::filesystem::path& p, int indent = 1);

}  // namespace sandwich
