// Structured-output requests (response_format json_schema, guided_json, guided_regex,
// guided_choice): the input's first byte picks the converter, the rest is a JSON Schema (JSON
// text), a regex, or choices separated by NUL bytes. The GBNF it makes is parsed and checks the
// input itself as a sentence. A GrammarError is a fine answer; a crash, a hang, a huge grammar
// or an invalid one (a converter's GBNF the parser refuses) is not.
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich::engine::grammar;
  const std::string_view input = sandwich::fuzz::as_text(data, size);
  if (input.empty()) return 0;
  const char kind = input[0];
  const std::string_view rest = input.substr(1);
  std::string gbnf;
  try {
    if (kind == 'r') {
      gbnf = gbnf_from_regex(rest);
    } else if (kind == 'c') {
      std::vector<std::string> choices;
      for (size_t at = 0; at <= rest.size();) {
        const size_t nul = std::min(rest.find('\0', at), rest.size());
        choices.emplace_back(rest.substr(at, nul - at));
        at = nul + 1;
      }
      gbnf = gbnf_from_choices(choices);
    } else {
      const nlohmann::json schema = nlohmann::json::parse(rest, nullptr, false);
      if (schema.is_discarded()) return 0;
      gbnf = gbnf_from_json_schema(schema);
    }
  } catch (const GrammarError&) {
    return 0;
  }
  try {
    (void)Grammar::parse(gbnf)->accepts(rest);
  } catch (const GrammarError& e) {
    // The converter's own output must parse; only the parser's size and depth bounds may refuse
    // it.
    const std::string what = e.what();
    if (what.find("too") == std::string::npos && what.find("deeper") == std::string::npos)
      std::abort();
  }
  return 0;
}
