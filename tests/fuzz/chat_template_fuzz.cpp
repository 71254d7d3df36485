// Chat templates and messages: the input is a template text, then role/content pairs, each
// part ended by a NUL byte. The template is recognised (or not), every format renders the
// messages, and the rendering is encoded with special tokens parsed, as a chat request is.
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  static const auto tok = make_tokenizer(make_synthetic_vocab(Vocab::Kind::ByteLevelBPE, 600));
  std::vector<std::string> parts;
  const std::string_view in = fuzz::as_text(data, size);
  for (size_t b = 0; b <= in.size();) {
    const size_t e = std::min(in.find('\0', b), in.size());
    parts.emplace_back(in.substr(b, e - b));
    b = e + 1;
  }
  const std::optional<ChatFormat> detected = detect_chat_format(parts[0]);
  std::vector<ChatMessage> messages;
  for (size_t i = 1; i + 1 < parts.size(); i += 2) messages.push_back({parts[i], parts[i + 1]});
  for (ChatFormat f : {ChatFormat::Llama3, ChatFormat::Llama2, ChatFormat::ChatML}) {
    const bool generation_prompt = !detected || *detected == f;
    const std::string text = render_chat(f, messages, generation_prompt, "<s>", "</s>");
    (void)tok->encode(text, false, true);
  }
  return 0;
}
