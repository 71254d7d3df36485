#pragma once
// Reading a JSON file with errors that name it (private to engine/).
#include <filesystem>

#include <nlohmann/json.hpp>

namespace sandwich {

// Throws std::runtime_error naming the file when it cannot be opened or parsed.
nlohmann::json read_json_file(const std::filesystem::path& p);

}  // namespace sandwich
