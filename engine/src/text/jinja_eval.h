#pragma once
// Renders a parsed template: jinja2's scoping, Python's operators, the limits of RenderLimits.
#include <string>

#include "text/jinja_ast.h"

namespace sandwich::engine::jinja {

// Throws Error naming where in the template rendering failed (or raise_exception's message).
std::string render_tree(const Node& root, const nlohmann::ordered_json& context,
                        const RenderLimits& limits);

}  // namespace sandwich::engine::jinja
