#include "engine/text/jinja.h"

#include <new>

#include "text/jinja_eval.h"
#include "text/jinja_parser.h"

namespace sandwich::engine::jinja {

namespace {

std::shared_ptr<const Node> parse_source(std::string_view source) {
  try {
    return parse(lex(source));
  } catch (const std::bad_alloc&) {
    throw Error("the template is too big to parse");
  }
}

}  // namespace

Template::Template(std::string_view source) : root_(parse_source(source)) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& context,
                             const RenderLimits& limits) const {
  return render_tree(*root_, context, limits);
}

}  // namespace sandwich::engine::jinja
