#pragma once
// Tokens to a template tree: statements (if, for, set, macro, ...) and expressions with jinja2's
// precedence. Throws Error naming the line and column of what it cannot parse.
#include <vector>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"

namespace sandwich::engine::jinja {

NodePtr parse(const std::vector<Token>& tokens);

}  // namespace sandwich::engine::jinja
