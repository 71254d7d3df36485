#include "endpoint_prompts.h"

#include <algorithm>
#include <exception>
#include <string>

#include "bench/server_api.h"

namespace sandwich::bench {

std::vector<BuiltPrompt> build_prompts(HttpClient& client, const Endpoint& ep, EndpointReport& er,
                                       const ServeOptions& o, const std::vector<int>& lengths,
                                       int salt0, int prefix_salt, std::ostream& log) {
  RemoteTokenizer tok(client, ep.url, er.model, o.api, o.api_key, std::min(o.timeout_s, 60.0));
  const TokenizerStyle style = tok.probe();
  std::vector<BuiltPrompt> out;
  out.reserve(lengths.size());
  if (style == TokenizerStyle::None) {
    er.tokenizer = "approximate";
    er.notes.push_back(
        "no usable /tokenize and /detokenize: prompt lengths are approximate (one token per common "
        "English word plus one BOS token); the usage block's prompt_tokens shows the real count");
  } else {
    er.tokenizer = std::string(name_of(style, kTokenizerStyleNames));
    if (o.api == Api::Chat && !tok.counts_template())
      er.notes.push_back(
          "chat: the server cannot tokenize messages, so prompt lengths count the message text "
          "without the chat template's tokens");
    log << "[" << ep.label << "] building " << lengths.size()
        << " prompts with the server's tokenizer (" << er.tokenizer << " /tokenize)\n";
  }
  PromptBuilder builder(tok, o.seed);
  bool exact_ok = style != TokenizerStyle::None;
  const int n_prefix = o.shared_prefix_tokens;
  BuiltPrompt prefix;
  if (n_prefix > 0) {
    try {
      if (exact_ok) prefix = builder.build(prefix_salt, n_prefix);
    } catch (const std::exception& e) {
      exact_ok = false;
      er.tokenizer = "approximate";
      er.notes.push_back(std::string("tokenizing failed (") + e.what() +
                         "); the shared prefix and all prompts are approximate");
    }
    if (!exact_ok) prefix = approximate_prompt(prefix_salt, n_prefix, o.seed);
  }
  // The prompt after the prefix is built one token longer: its BOS does not count once joined.
  auto join = [&](BuiltPrompt p, bool exact) {
    if (n_prefix == 0) return p;
    p.text = prefix.text + " " + p.text;
    const int want = p.tokens + n_prefix - 1;
    p.tokens = exact ? tok.count_prompt(p.text) : want;
    p.exact = exact && p.tokens == want;
    return p;
  };
  const int extra = n_prefix > 0 ? 1 : 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int idx = salt0 + static_cast<int>(i);
    if (exact_ok) {
      try {
        out.push_back(join(builder.build(idx, lengths[i] + extra), true));
        continue;
      } catch (const std::exception& e) {
        exact_ok = false;
        er.tokenizer = "approximate";
        er.notes.push_back(std::string("tokenizing failed (") + e.what() + "); prompts from #" +
                           std::to_string(i) + " on are approximate");
      }
    }
    out.push_back(join(approximate_prompt(idx, lengths[i] + extra, o.seed), false));
  }
  return out;
}

}  // namespace sandwich::bench
