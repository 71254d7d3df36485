#include "engine/text/jinja.h"

#include "text/jinja_eval.h"
#include "text/jinja_parser.h"

namespace sandwich::engine::jinja {

Template::Template(std::string_view source) : root_(parse(lex(source))) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& context,
                             const RenderLimits& limits) const {
  return render_tree(*root_, context, limits);
}

}  // namespace sandwich::engine::jinja
