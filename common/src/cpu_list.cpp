#include "common/cpu_list.h"

#include <charconv>
#include <stdexcept>

namespace sandwich {

std::string format_cpu_list(std::span<const int> ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(ids[i]);
    if (j > i) s += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::vector<int> parse_cpu_list(std::string_view text, int max_id) {
  std::vector<int> out;
  auto bad = [&](std::string_view item, const std::string& why) {
    throw std::invalid_argument("'" + std::string(text) + "': " + why + " ('" + std::string(item) +
                                "')");
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const char* end = item.data() + item.size();
    int a = 0, b = 0;
    auto r = std::from_chars(item.data(), end, a);
    if (item.empty() || r.ec != std::errc()) bad(item, "expected an id or a range like 0-3");
    b = a;
    if (r.ptr != end) {
      if (*r.ptr != '-') bad(item, "expected an id or a range like 0-3");
      r = std::from_chars(r.ptr + 1, end, b);
      if (r.ec != std::errc() || r.ptr != end) bad(item, "expected an id or a range like 0-3");
      if (b < a) bad(item, "a range must not run backwards");
    }
    if (a < 0 || b > max_id) bad(item, "ids must be 0 to " + std::to_string(max_id));
    for (int i = a; i <= b; ++i) out.push_back(i);
    pos = comma + 1;
  }
  return out;
}

}  // namespace sandwich
