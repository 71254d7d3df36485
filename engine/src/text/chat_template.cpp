#include "engine/text/chat_template.h"

#include <stdexcept>

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
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  ChatRenderOptions o;
  o.add_generation_prompt = add_generation_prompt;
  return render(msgs, o);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatRenderOptions& options) const {
  // What apply_chat_template passes: the messages, the special tokens, the tools (none unless
  // given), no documents, and the caller's extra variables beside them.
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  if (!options.extra.is_null()) {
    if (!options.extra.is_object())
      throw std::invalid_argument("the chat template's extra variables must be an object");
    for (const char* k : kReservedChatTemplateKeys)
      if (options.extra.contains(k))
        throw std::invalid_argument(std::string("'") + k +
                                    "' is set by the server and cannot be a template variable");
    ctx = options.extra;
  }
  ctx["messages"] = messages;
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  ctx["bos_token"] = bos_;
  ctx["eos_token"] = eos_;
  ctx["tools"] = options.tools;
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
