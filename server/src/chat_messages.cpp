#include "chat_messages.h"

#include <string>

#include "api_error.h"
#include "request_fields.h"

namespace sandwich::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const std::string* string_member(const json& o, const char* k) {
  const auto it = o.find(k);
  return it != o.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

// An assistant turn's calls as templates read them: {"id", "type", "function": {"name",
// "arguments"}}, the arguments (a JSON string on the wire) as the object they hold, as vLLM and
// transformers pass them (Llama-3.1's and Qwen2.5's templates write `arguments | tojson`).
ojson template_tool_calls(const json& calls) {
  if (!calls.is_array()) bad("an assistant message's 'tool_calls' must be a list", "messages");
  ojson out = ojson::array();
  for (const json& c : calls) {
    const json* fn = c.is_object() ? Fields(c).get("function") : nullptr;
    const std::string* id = c.is_object() ? string_member(c, "id") : nullptr;
    const std::string* name = fn && fn->is_object() ? string_member(*fn, "name") : nullptr;
    const std::string* args = fn && fn->is_object() ? string_member(*fn, "arguments") : nullptr;
    if (!id || !name || !args)
      bad("each of an assistant message's 'tool_calls' needs a string 'id' and a 'function' with "
          "string 'name' and 'arguments'",
          "messages");
    if (const json* t = Fields(c).get("type"); t && *t != "function")
      bad("a tool call's 'type' must be \"function\"", "messages");
    ojson a = ojson::parse(*args, nullptr, false);
    if (a.is_discarded()) a = *args;  // not JSON: the template gets the text
    out.push_back(
        {{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", a}}}});
  }
  return out;
}

}  // namespace

ojson template_message(const json& e, size_t& content_bytes) {
  if (!e.is_object()) bad("each message must be an object with 'role' and 'content'", "messages");
  const std::string* role_p = string_member(e, "role");
  if (!role_p) bad("each message needs a string 'role'", "messages");
  const std::string& role = *role_p;
  if (role != "system" && role != "user" && role != "assistant" && role != "developer" &&
      role != "tool")
    bad("unsupported message role '" + role + "' (system, user, assistant, tool)", "messages");
  const Fields mf(e);
  if (mf.get("name") && !mf.get("name")->is_string())
    bad("message 'name' must be a string", "messages");
  const json* calls = role == "assistant" ? mf.get("tool_calls") : nullptr;
  std::string content;
  const json* c = mf.get("content");
  // Only an assistant turn may go without content (one that made tool calls).
  if (!c && role != "assistant") bad("a '" + role + "' message needs 'content'", "messages");
  if (c && c->is_string()) {
    content = c->get<std::string>();
  } else if (c && c->is_array()) {  // [{"type":"text","text":...}]
    for (const json& part : *c) {
      const std::string* type = part.is_object() ? string_member(part, "type") : nullptr;
      const std::string* text = part.is_object() ? string_member(part, "text") : nullptr;
      if (!type || *type != "text" || !text)
        bad("only text content parts are supported", "messages");
      content += *text;
    }
  } else if (c) {
    bad("message 'content' must be a string or a list of text parts", "messages");
  }
  content_bytes += content.size();
  ojson m = {{"role", role == "developer" ? std::string("system") : role}, {"content", content}};
  if (const json* n = mf.get("name")) m["name"] = *n;
  // An empty list is no calls: templates test for the key (Llama-3.1: 'tool_calls' in message).
  if (calls && !(calls->is_array() && calls->empty()))
    m["tool_calls"] = template_tool_calls(*calls);
  if (role == "tool") {
    const std::string* id = string_member(e, "tool_call_id");
    if (!id) bad("a 'tool' message needs a string 'tool_call_id'", "messages");
    m["tool_call_id"] = *id;
  }
  return m;
}

}  // namespace sandwich::server
