#pragma once
// Reading a JSON file with errors that name it.
#include <filesystem>

#include <nlohmann/json.hpp>

namespace sandwich {

// Throws std::runtime_error naming the file when it is missing, a directory, unreadable or not
// valid JSON.
nlohmann::json read_json_file(const std::filesystem::path& p);

}  // namespace sandwich
