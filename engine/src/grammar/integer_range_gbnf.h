#pragma once
// Integers between bounds as digit patterns (JSON Schema's minimum/maximum on "integer").
#include <cstdint>
#include <optional>
#include <string>

namespace sandwich::engine::grammar {

// A GBNF expression for the decimal integers in [lo, hi] (an absent bound: unbounded on that
// side) as JSON writes them: no leading zeros, no "-0". lo <= hi when both are given.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace sandwich::engine::grammar
