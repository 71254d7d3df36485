#pragma once
// Template source to tokens: text between tags (whitespace control applied, as jinja2 with
// trim_blocks and lstrip_blocks does), the tags' delimiters, and the tokens of expressions.
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja_ast.h"

namespace sandwich::engine::jinja {

struct Token {
  enum class Kind {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    End
  };
  Kind kind;
  std::string text;  // Text: the text; String: its value; Name, Op, Int, Float: as written
  Where where;
};

// Throws Error for an unclosed tag, comment or string, or a character no token starts with.
std::vector<Token> lex(std::string_view source);

}  // namespace sandwich::engine::jinja
