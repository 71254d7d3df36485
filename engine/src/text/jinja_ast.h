#pragma once
// A parsed Jinja template: expressions and statements, each with where it starts in the source.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/jinja.h"
#include "text/jinja_value.h"

namespace sandwich::engine::jinja {

struct Where {
  int line = 1, column = 1;
};

// "line 3, column 7: <what>"
[[noreturn]] void fail_at(Where w, const std::string& what);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    Attr,     // args[0].name
    Item,     // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]], each bound may be null
    Call,     // args[0](args[1:], kwargs)
    Filter,   // args[0] | name(args[1:], kwargs)
    Test,     // args[0] is [not] name(args[1:])
    Unary,    // name ("not", "-", "+") args[0]
    Binary,   // args[0] name args[1]
    Ternary,  // args[0] if args[1] else args[2] (null: undefined)
    List,     // [args...] and tuples
    Dict,     // {args[0]: args[1], ...}
  };
  Kind kind;
  Where where;
  Value value;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  int height = 1;  // of the tree below, this node included: the parser bounds it
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    Root,    // body
    Text,    // text
    Output,  // {{ expr }}
    If,      // branches: (cond, body) ..., the last cond null for else
    For,     // for targets in expr [if filter]: body [else: else_body]
    Set,     // set targets = expr, or set target.attr = expr; block set: body
    Macro,   // macro name(params): body
    Break,
    Continue,
  };
  Kind kind;
  Where where;
  std::string text;
  ExprPtr expr, filter;
  std::vector<std::string> targets;
  std::string attr;  // Set: the namespace attribute
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: name, default (may be null)
};

}  // namespace sandwich::engine::jinja
