#include "engine/text/token_id_list.h"

#include "common/cli.h"

namespace sandwich::engine {

std::vector<int32_t> parse_token_ids(const std::string& text, int32_t vocab_size,
                                     const std::string& flag) {
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    const int64_t v = ArgParser::parse_int(flag, cur);
    if (v < 0 || v >= vocab_size)
      throw CliError("token id " + cur + " is outside the vocabulary of " +
                     std::to_string(vocab_size));
    ids.push_back(static_cast<int32_t>(v));
    cur.clear();
  };
  for (char ch : text) {
    if (ch == ' ' || ch == ',' || ch == '\n' || ch == '\t')
      flush();
    else
      cur += ch;
  }
  flush();
  return ids;
}

}  // namespace sandwich::engine
