#pragma once
// A Jinja interpreter for the subset chat templates use, rendering as HF transformers'
// apply_chat_template does (jinja2 with trim_blocks and lstrip_blocks, Python's semantics for
// values, its tojson and raise_exception). Parsed once, rendered many times (thread-safe).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sandwich::engine::jinja {

// A template that cannot be parsed or rendered: the message names the line and column and the
// problem, or is the template's own raise_exception message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one render may take: a template that loops, recurses or grows without end is stopped
// here with an Error. The defaults hold any published chat template with megabytes of messages.
struct RenderLimits {
  int64_t max_steps = 5'000'000;  // expressions and statements evaluated, and builtins' work
  // Bytes of output, and of any one value the template builds (a string; a list or dict as
  // its elements: sizeof(Value) each plus their strings' characters), checked before building.
  size_t max_output = 64u << 20;
  int max_call_depth = 100;  // nested macro calls
  // Bytes of all values one render creates, summed whether or not they are freed again (every
  // string looked up, built or written out counts): bounds its peak memory, whatever it does.
  // Published templates take 4 to 16 times their messages' size (8 MiB: a request body's most).
  size_t max_total_bytes = 512u << 20;
  // Statements, expressions and macro calls being evaluated inside one another. The thread's
  // real stack is watched too (a render may run on a thread with a small one).
  int max_depth = 2000;
};

struct Node;

class Template {
 public:
  // Throws Error for a template that does not parse.
  explicit Template(std::string_view source);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // context: the variables (an object); its members keep their order. Throws Error.
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace sandwich::engine::jinja
