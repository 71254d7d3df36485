#pragma once
// Base64 (RFC 4648, with padding), as OpenAI's embeddings encode their floats.
#include <cstdint>
#include <span>
#include <string>

namespace sandwich::server {

std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace sandwich::server
