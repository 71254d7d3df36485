#pragma once
// server::Sandwichd's options for stories260K from the reference data, on a port it picks.
#include "server/sandwichd.h"
#include "test_data.h"

namespace sandwich::test {

inline server::SandwichdOptions stories_options() {
  const std::filesystem::path dir = data_dir() / "models/stories260K";
  server::SandwichdOptions o;
  o.load.model = (dir / "stories260K.bin").string();
  o.load.tokenizer = dir / "tok512.bin";
  o.http.port = 0;
  o.service.served_model_name = "stories";
  return o;
}

}  // namespace sandwich::test
