#include "engine/text/chat_template.h"

namespace sandwich::engine {

std::string_view builtin_chat_template(ChatFormat f) {
  switch (f) {
    case ChatFormat::Llama3:
      return "{% if bos_token %}{{ '<|begin_of_text|>' }}{% endif %}"
             "{% for message in messages %}"
             "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
             "message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
             "{% if add_generation_prompt %}"
             "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
    case ChatFormat::ChatML:
      return "{% for message in messages %}"
             "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
             "{% endfor %}"
             "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    case ChatFormat::Llama2:
      // The system prompt is folded into the first turn; every user turn opens with BOS, every
      // assistant turn closes with EOS.
      return "{% if messages and messages[0]['role'] == 'system' %}"
             "{% set system = messages[0]['content'] %}{% set loop_messages = messages[1:] %}"
             "{% else %}{% set system = '' %}{% set loop_messages = messages %}{% endif %}"
             "{% for message in loop_messages %}"
             "{% set content = message['content'] %}"
             "{% if loop.first and system %}"
             "{% set content = '<<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + content %}{% endif %}"
             "{% if message['role'] == 'user' %}"
             "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
             "{% elif message['role'] == 'assistant' %}"
             "{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}"
             "{% endfor %}"
             "{% if not loop_messages and system %}"
             "{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n [/INST]' }}"
             "{% endif %}";
  }
  return {};
}

ChatTemplate::ChatTemplate(std::string_view source, std::string bos_token, std::string eos_token)
    : template_(source), bos_(std::move(bos_token)), eos_(std::move(eos_token)) {}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  // What apply_chat_template passes: the messages, the special tokens, and no tools/documents.
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  nlohmann::ordered_json& msgs = ctx["messages"] = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = bos_;
  ctx["eos_token"] = eos_;
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  return template_.render(ctx);
}

std::string chat_template_of_config(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array())
    for (const auto& t : value)
      if (t.is_object() && t.contains("name") && t["name"] == "default" && t.contains("template") &&
          t["template"].is_string())
        return t["template"].get<std::string>();
  return {};
}

std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos,
                        const std::string& eos) {
  return ChatTemplate(builtin_chat_template(f), bos, eos).render(messages, add_generation_prompt);
}

}  // namespace sandwich::engine
