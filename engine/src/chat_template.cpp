#include "engine/chat_template.h"

namespace sandwich {
namespace {

std::string strip(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

std::optional<ChatFormat> detect_chat_format(std::string_view t) {
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::Llama3;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::ChatML;
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::Llama2;
  return std::nullopt;
}

std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos,
                        const std::string& eos) {
  std::string out;
  switch (f) {
    case ChatFormat::Llama3:
      if (!bos.empty()) out += "<|begin_of_text|>";
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + strip(m.content) +
               "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::ChatML:
      for (const auto& m : messages)
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::Llama2: {
      // Meta's template: the system prompt is folded into the first user turn; every user turn
      // opens with BOS, every assistant turn closes with EOS.
      size_t i = 0;
      std::string system;
      if (!messages.empty() && messages[0].role == "system") {
        system = messages[0].content;
        i = 1;
      }
      bool first = true;
      for (; i < messages.size(); ++i) {
        const auto& m = messages[i];
        std::string content = m.content;
        if (first && !system.empty()) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        first = false;
        if (m.role == "user")
          out += bos + "[INST] " + strip(content) + " [/INST]";
        else if (m.role == "assistant")
          out.append(" ").append(strip(content)).append(" ").append(eos);
      }
      if (first && !system.empty())
        out += bos + "[INST] <<SYS>>\n" + system + "\n<</SYS>>\n\n [/INST]";
      break;
    }
  }
  return out;
}

}  // namespace sandwich
