#pragma once
// The toy tokenizer of the bench tests, the fake server's and the prompt tests' alike: one
// token per whitespace-separated word, or per n bytes; ids handed out from 10 up in the order
// the pieces are first seen; 1 is BOS.
#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace sandwich::test {

class ToyVocab {
 public:
  explicit ToyVocab(int bytes_per_token = 0) : bytes_(bytes_per_token) {}

  std::vector<std::string> split(const std::string& text) const {
    std::vector<std::string> out;
    if (bytes_ > 0) {
      for (size_t i = 0; i < text.size(); i += static_cast<size_t>(bytes_))
        out.push_back(text.substr(i, static_cast<size_t>(bytes_)));
      return out;
    }
    std::string cur;
    for (char c : text) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
  }

  std::vector<int> encode(const std::string& text, bool bos) {
    std::vector<int> out;
    if (bos) out.push_back(1);
    for (const auto& p : split(text)) {
      auto [it, fresh] = ids_.emplace(p, static_cast<int>(pieces_.size()) + kFirstId);
      if (fresh) pieces_.push_back(p);
      out.push_back(it->second);
    }
    return out;
  }

  // Words come back joined by single spaces; ids never handed out (BOS among them) are skipped.
  std::string decode(const std::vector<int>& ids) const {
    std::string out;
    for (int id : ids) {
      if (id < kFirstId || id - kFirstId >= static_cast<int>(pieces_.size())) continue;
      if (bytes_ == 0 && !out.empty()) out += ' ';
      out += pieces_[static_cast<size_t>(id - kFirstId)];
    }
    return out;
  }

 private:
  static constexpr int kFirstId = 10;
  int bytes_;
  std::map<std::string, int> ids_;
  std::vector<std::string> pieces_;
};

}  // namespace sandwich::test
