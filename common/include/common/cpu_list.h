#pragma once
// CPU and NUMA-node id lists in the form Linux and hwloc print them: "0-3,8-11".
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sandwich {

// Runs of consecutive ids as ranges, in the given order: {0,1,2,4,6,7} -> "0-2,4,6-7".
std::string format_cpu_list(std::span<const int> ids);
// The inverse: "0-3,8" -> {0,1,2,3,8}; ids from 0 to max_id. Throws std::invalid_argument
// naming the bad item.
std::vector<int> parse_cpu_list(std::string_view text, int max_id = 65535);

}  // namespace sandwich
