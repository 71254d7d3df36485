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

// What one render may take: a template that loops or recurses without end is stopped here.
struct RenderLimits {
  int64_t max_steps = 5'000'000;  // expressions and statements evaluated
  size_t max_output = 64u << 20;  // bytes of output, and of any one string or list
  int max_call_depth = 100;       // nested macro calls
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
