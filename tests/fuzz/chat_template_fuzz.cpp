// Chat templates and messages: the input is a template text, then role/content pairs, each
// part ended by a NUL byte. The template is parsed and rendered with the messages (a Jinja error
// is a fine outcome; anything else is not), every built-in format renders them, and the
// renderings are encoded with special tokens parsed, as a chat request is.
#include <string>
#include <vector>

#include "engine/text/chat_template.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sandwich;
  static const auto tok =
      engine::make_tokenizer(engine::make_synthetic_vocab(engine::Vocab::Kind::ByteLevelBPE, 600));
  std::vector<std::string> parts;
  const std::string_view in = fuzz::as_text(data, size);
  for (size_t b = 0; b <= in.size();) {
    const size_t e = std::min(in.find('\0', b), in.size());
    parts.emplace_back(in.substr(b, e - b));
    b = e + 1;
  }
  std::vector<engine::ChatMessage> messages;
  for (size_t i = 1; i + 1 < parts.size(); i += 2) messages.push_back({parts[i], parts[i + 1]});
  try {
    // Small limits: a template that loops long is stopped, fast.
    engine::jinja::RenderLimits limits{20000, 1 << 16, 20};
    limits.max_total_bytes = 64u << 20;
    const engine::jinja::Template t(parts[0]);
    nlohmann::ordered_json ctx = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    ctx["add_generation_prompt"] = true;
    for (const engine::ChatMessage& m : messages)
      ctx["messages"].push_back({{"role", m.role}, {"content", m.content}});
    (void)tok->encode(t.render(ctx, limits), false, true);
  } catch (const engine::jinja::Error&) {
  }
  for (engine::ChatFormat f :
       {engine::ChatFormat::Llama3, engine::ChatFormat::Llama2, engine::ChatFormat::ChatML}) {
    const std::string text = engine::render_chat(f, messages, true, "<s>", "</s>");
    (void)tok->encode(text, false, true);
  }
  return 0;
}
