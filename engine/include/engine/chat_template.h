#pragma once
// Chat formats: Llama-3, Llama-2 and ChatML, recognised from a model's Jinja chat template and
// rendered to the text the model was trained on (special tokens as text, to be encoded with
// parse_special = true).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"

namespace sandwich {

enum class ChatFormat { Llama3, Llama2, ChatML };
// The built-in formats' names, as --chat-template takes them.
inline constexpr EnumName<ChatFormat> kChatFormatNames[] = {
    {ChatFormat::Llama3, "llama3"}, {ChatFormat::Llama2, "llama2"}, {ChatFormat::ChatML, "chatml"}};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

// Which of the known formats a Jinja template implements, if any.
std::optional<ChatFormat> detect_chat_format(std::string_view jinja_template);

// bos/eos: the tokenizer's BOS and EOS texts (Llama-2 writes them; empty to leave them out).
// Llama-3 writes <|begin_of_text|> when bos is not empty.
std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const std::string& bos, const std::string& eos);

}  // namespace sandwich
