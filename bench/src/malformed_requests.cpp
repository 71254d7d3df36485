#include "malformed_requests.h"

#include <nlohmann/json.hpp>

namespace sandwich::bench {

std::vector<MalformedRequest> malformed_requests(const std::string& model) {
  using nlohmann::json;
  const json chat = {{"model", model}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  const json completion = {{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 4}};
  auto with = [](json j, const std::string& key, json value) {
    j[key] = std::move(value);
    return j.dump();
  };
  // Deep nesting is written as text: building it as a json value would overflow our own stack.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::vector<MalformedRequest> out = {
      {"truncated JSON", "POST", "/v1/completions", R"({"model": ")" + model + R"(", "prompt":)"},
      {"body is an array", "POST", "/v1/chat/completions", "[1, 2, 3]"},
      {"nested content", "POST", "/v1/chat/completions",
       R"({"model":")" + model + R"(","messages":[{"role":"user","content":)" + deep + "}]}"},
      {"nested tokenize", "POST", "/tokenize",
       R"({"model":")" + model + R"(","prompt":)" + deep + "}"},
      {"negative max_tokens", "POST", "/v1/completions", with(completion, "max_tokens", -1)},
      {"huge n", "POST", "/v1/completions", with(completion, "n", 100000)},
      {"temperature as text", "POST", "/v1/completions", with(completion, "temperature", "hot")},
      {"stop of numbers", "POST", "/v1/completions", with(completion, "stop", {1, 2})},
      {"messages as text", "POST", "/v1/chat/completions", with(chat, "messages", "hello")},
      {"unknown role", "POST", "/v1/chat/completions",
       with(chat, "messages", {{{"role", "wizard"}, {"content", "Hi"}}})},
      {"tool without a name", "POST", "/v1/chat/completions",
       with(chat, "tools", {{{"type", "function"}, {"function", json::object()}}})},
      {"tool_choice of no tool", "POST", "/v1/chat/completions",
       with(chat, "tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}})},
      {"user as number", "POST", "/v1/chat/completions", with(chat, "user", 1)},
      {"unknown model", "POST", "/v1/completions", with(completion, "model", "no-such-model")},
      {"prompt too long", "POST", "/v1/completions", with(completion, "max_tokens", 1 << 30)},
      {"unknown route", "POST", "/v1/engines", completion.dump()},
  };
  return out;
}

}  // namespace sandwich::bench
