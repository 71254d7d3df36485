#pragma once
// What the fuzz targets share: a scratch folder for loaders that take a path, a tokenizer
// workout, and the rule that an exception is a fine answer to a bad input. Each target is a
// standard libFuzzer entry point (LLVMFuzzerTestOneInput); the GoogleTest build renames it and
// replays the target's seed corpus through it (corpus_replay_test.cpp).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer.h"

namespace sandwich::fuzz {

// A folder of this process's own, removed at exit; each input overwrites the files in it.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "sandwich-fuzz-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) std::abort();
      path = tmpl;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// The input as the file `name` in the scratch folder.
inline std::filesystem::path write_input(const std::string& name, const uint8_t* data,
                                         size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// What the server does with a tokenizer it loaded: encode (with and without special tokens),
// decode, and stream the pieces back.
inline void exercise_tokenizer(const engine::Tokenizer& t) {
  const std::string text = "Hello world! <s> <|eot_id|> \xc3\xa9t\xc3\xa9 \xe2\x96\x81 12 \xff";
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids = t.encode(text, true, special);
    (void)t.decode(ids, special);
    engine::IncrementalDecoder d(t);
    for (int32_t id : ids) (void)d.push(id);
    (void)d.flush();
  }
  const int32_t n = t.vocab_size();
  for (int32_t id : {0, 1, 2, n / 2, n - 1})
    if (id >= 0 && id < n) {
      (void)t.token_text(id);
      (void)t.piece(id, -1);
      (void)t.is_special(id);
    }
}

}  // namespace sandwich::fuzz
