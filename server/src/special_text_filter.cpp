#include "special_text_filter.h"

#include <algorithm>
#include <utility>

namespace sandwich::server {

std::vector<std::string> special_token_texts(const engine::Tokenizer& tok,
                                             const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (!tok.is_special(id)) continue;
    std::string t(tok.token_text(id));
    if (!t.empty() && std::find(keep.begin(), keep.end(), t) == keep.end()) out.push_back(t);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string SpecialTextFilter::push(std::string_view text) {
  std::string buf = std::move(held_);
  buf += text;
  held_.clear();
  std::string out;
  size_t i = 0;
  while (i < buf.size()) {
    const std::string_view rest = std::string_view(buf).substr(i);
    // The first text not below `rest` is the only one that can be its prefix or start it.
    const auto it = std::lower_bound(texts_.begin(), texts_.end(), rest.substr(0, 1));
    bool dropped = false, partial = false;
    for (auto t = it; t != texts_.end() && !t->empty() && (*t)[0] == rest[0]; ++t) {
      if (rest.starts_with(*t)) {
        i += t->size();
        dropped = true;
        break;
      }
      if (t->starts_with(rest)) partial = true;
    }
    if (dropped) continue;
    if (partial) {
      held_ = rest;
      break;
    }
    out += buf[i++];
  }
  return out;
}

std::string SpecialTextFilter::flush() {
  return std::exchange(held_, {});
}

}  // namespace sandwich::server
