#include "text/jinja_parser.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "text/jinja_budget.h"

namespace sandwich::engine::jinja {
namespace {

// Nesting of expressions and blocks: deeper than any real template, shallow enough for the stack.
constexpr int kMaxDepth = 200;
// The height of an expression's tree, which loops build too (`a + b + c ...` is a left-leaning
// tree as tall as the chain is long): evaluating and freeing it recurses that deep. Real
// templates stay below 30.
constexpr int kMaxHeight = 256;

using TK = Token::Kind;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  NodePtr root() {
    auto n = node(Node::Kind::Root, peek().where);
    n->body = body({});
    if (peek().kind != TK::End) fail_at(peek().where, "unexpected '" + peek().text + "'");
    return n;
  }

 private:
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth)
        fail_at(p.peek().where, "the template nests deeper than " + std::to_string(kMaxDepth));
      if (past_stack_floor(p.stack_floor_))
        fail_at(p.peek().where, "the template nests too deep for this thread's stack");
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (i_ < t_.size() - 1) ++i_;
    return t;
  }
  bool at_op(const char* op, size_t k = 0) const {
    return peek(k).kind == TK::Op && peek(k).text == op;
  }
  bool at_name(const char* n, size_t k = 0) const {
    return peek(k).kind == TK::Name && peek(k).text == n;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TK::End:
        return "the end of the template";
      case TK::BlockEnd:
        return "'%}'";
      case TK::VarEnd:
        return "'}}'";
      case TK::Text:
        return "text";
      case TK::String:
        return "a string";
      case TK::BlockBegin:
        return "'{%'";
      case TK::VarBegin:
        return "'{{'";
      default:
        return "'" + t.text + "'";
    }
  }
  [[noreturn]] void unexpected(const std::string& wanted) const {
    fail_at(peek().where, "expected " + wanted + ", got " + describe(peek()));
  }
  void expect_op(const char* op) {
    if (!at_op(op)) unexpected(std::string("'") + op + "'");
    next();
  }
  void expect(TK kind, const char* what) {
    if (peek().kind != kind) unexpected(what);
    next();
  }
  std::string name() {
    if (peek().kind != TK::Name) unexpected("a name");
    return next().text;
  }

  static NodePtr node(Node::Kind k, Where w) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->where = w;
    return n;
  }
  // `e` with all its operands: its height measured, and refused past kMaxHeight.
  static ExprPtr sealed(ExprPtr e) {
    int h = 0;
    for (const ExprPtr& a : e->args)
      if (a) h = std::max(h, a->height);
    for (const auto& kv : e->kwargs) h = std::max(h, kv.second->height);
    e->height = h + 1;
    if (e->height > kMaxHeight)
      fail_at(e->where, "the expression nests deeper than " + std::to_string(kMaxHeight) +
                            " levels (a chain of operators, filters, attributes or calls that "
                            "long counts as nesting)");
    return e;
  }
  static ExprPtr expr(Expr::Kind k, Where w) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->where = w;
    return e;
  }

  // Statements up to a block tag named in `stops` (left unread: "{%" then the name) or the end.
  Body body(std::initializer_list<const char*> stops) {
    DepthGuard g(*this);
    Body out;
    for (;;) {
      const Token& t = peek();
      if (t.kind == TK::End) {
        if (stops.size() == 0) return out;
        fail_at(t.where, std::string("the template ends before '{% ") + *stops.begin() + " %}'");
      }
      if (t.kind == TK::Text) {
        auto n = node(Node::Kind::Text, t.where);
        n->text = next().text;
        out.push_back(std::move(n));
      } else if (t.kind == TK::VarBegin) {
        next();
        auto n = node(Node::Kind::Output, t.where);
        n->expr = expression();
        expect(TK::VarEnd, "'}}'");
        out.push_back(std::move(n));
      } else if (t.kind == TK::BlockBegin) {
        const Token& kw = peek(1);
        if (kw.kind != TK::Name) fail_at(kw.where, "expected a tag name after '{%'");
        for (const char* s : stops)
          if (kw.text == s) return out;
        next();
        out.push_back(statement());
      } else {
        fail_at(t.where, "unexpected " + describe(t));
      }
    }
  }

  // "{% name" is read; the tag's remaining tokens, then its body and end tag.
  NodePtr statement() {
    const Token& kw = next();
    const std::string& k = kw.text;
    if (k == "if") return if_statement(kw.where);
    if (k == "for") return for_statement(kw.where);
    if (k == "set") return set_statement(kw.where);
    if (k == "macro") return macro_statement(kw.where);
    if (k == "break" || k == "continue") {
      expect(TK::BlockEnd, "'%}'");
      return node(k == "break" ? Node::Kind::Break : Node::Kind::Continue, kw.where);
    }
    if (k == "generation") {
      // HF's marker of assistant text: rendered as its body.
      expect(TK::BlockEnd, "'%}'");
      auto n = node(Node::Kind::If, kw.where);
      n->branches.emplace_back(nullptr, body({"endgeneration"}));
      end_tag("endgeneration");
      return n;
    }
    fail_at(kw.where, "unknown or misplaced tag '" + k + "'");
  }

  void end_tag(const char* name) {
    expect(TK::BlockBegin, "'{%'");
    if (!at_name(name)) unexpected(std::string("'") + name + "'");
    next();
    expect(TK::BlockEnd, "'%}'");
  }

  NodePtr if_statement(Where w) {
    auto n = node(Node::Kind::If, w);
    ExprPtr cond = expression();
    expect(TK::BlockEnd, "'%}'");
    for (;;) {
      Body b = body({"elif", "else", "endif"});
      n->branches.emplace_back(std::move(cond), std::move(b));
      next();  // {%
      const std::string k = next().text;
      if (k == "endif") {
        expect(TK::BlockEnd, "'%}'");
        break;
      }
      if (k == "elif") {
        cond = expression();
        expect(TK::BlockEnd, "'%}'");
        continue;
      }
      expect(TK::BlockEnd, "'%}'");  // else
      n->branches.emplace_back(nullptr, body({"endif"}));
      end_tag("endif");
      break;
    }
    return n;
  }

  NodePtr for_statement(Where w) {
    auto n = node(Node::Kind::For, w);
    const bool paren = at_op("(");
    if (paren) next();
    n->targets.push_back(name());
    while (at_op(",")) {
      next();
      n->targets.push_back(name());
    }
    if (paren) expect_op(")");
    if (!at_name("in")) unexpected("'in'");
    next();
    n->expr = expression(false);
    if (at_name("if")) {
      next();
      n->filter = expression();
    }
    if (at_name("recursive")) fail_at(peek().where, "recursive loops are not supported");
    expect(TK::BlockEnd, "'%}'");
    n->body = body({"else", "endfor"});
    next();
    if (next().text == "else") {
      expect(TK::BlockEnd, "'%}'");
      n->else_body = body({"endfor"});
      end_tag("endfor");
    } else {
      expect(TK::BlockEnd, "'%}'");
    }
    return n;
  }

  NodePtr set_statement(Where w) {
    auto n = node(Node::Kind::Set, w);
    n->targets.push_back(name());
    if (at_op(".")) {
      next();
      n->attr = name();
    } else {
      while (at_op(",")) {
        next();
        n->targets.push_back(name());
      }
    }
    if (at_op("=")) {
      next();
      n->expr = tuple_or_expression();
      expect(TK::BlockEnd, "'%}'");
      return n;
    }
    if (n->targets.size() != 1 || !n->attr.empty()) unexpected("'=' (a block set takes one name)");
    expect(TK::BlockEnd, "'%}'");
    n->body = body({"endset"});
    end_tag("endset");
    return n;
  }

  NodePtr macro_statement(Where w) {
    auto n = node(Node::Kind::Macro, w);
    n->text = name();
    expect_op("(");
    while (!at_op(")")) {
      std::string p = name();
      ExprPtr def;
      if (at_op("=")) {
        next();
        def = expression();
      }
      n->params.emplace_back(std::move(p), std::move(def));
      if (!at_op(")")) expect_op(",");
    }
    next();
    expect(TK::BlockEnd, "'%}'");
    n->body = body({"endmacro"});
    end_tag("endmacro");
    return n;
  }

  // a, b, c: a list (Python's tuple); one expression alone otherwise.
  ExprPtr tuple_or_expression() {
    const Where w = peek().where;
    ExprPtr first = expression();
    if (!at_op(",")) return first;
    auto l = expr(Expr::Kind::List, w);
    l->args.push_back(std::move(first));
    while (at_op(",")) {
      next();
      l->args.push_back(expression());
    }
    return sealed(std::move(l));
  }

  ExprPtr expression(bool with_condition = true) {
    DepthGuard g(*this);
    const Where w = peek().where;
    ExprPtr e = or_expr();
    while (with_condition && at_name("if")) {
      next();
      auto t = expr(Expr::Kind::Ternary, w);
      ExprPtr cond = or_expr();
      ExprPtr otherwise;
      if (at_name("else")) {
        next();
        otherwise = expression();
      }
      t->args.push_back(std::move(e));
      t->args.push_back(std::move(cond));
      t->args.push_back(std::move(otherwise));
      e = sealed(std::move(t));
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = expr(Expr::Kind::Binary, a->where);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return sealed(std::move(e));
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (at_name("or")) {
      next();
      e = binary("or", std::move(e), and_expr());
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (at_name("and")) {
      next();
      e = binary("and", std::move(e), not_expr());
    }
    return e;
  }
  ExprPtr not_expr() {
    if (at_name("not")) {
      DepthGuard g(*this);
      auto e = expr(Expr::Kind::Unary, next().where);
      e->name = "not";
      e->args.push_back(not_expr());
      return sealed(std::move(e));
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    for (;;) {
      if (peek().kind == TK::Op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        std::string op = next().text;
        e = binary(op, std::move(e), math1());
      } else if (at_name("in")) {
        next();
        e = binary("in", std::move(e), math1());
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        e = binary("not in", std::move(e), math1());
      } else {
        return e;
      }
    }
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (at_op("+") || at_op("-")) {
      std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (at_op("~")) {
      next();
      e = binary("~", std::move(e), math2());
    }
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = power();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      std::string op = next().text;
      e = binary(op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (at_op("**")) {
      next();
      e = binary("**", std::move(e), unary(true));
    }
    return e;
  }
  ExprPtr unary(bool with_filter) {
    DepthGuard g(*this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      e = expr(Expr::Kind::Unary, peek().where);
      e->name = next().text;
      e->args.push_back(unary(false));
      e = sealed(std::move(e));
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filters(std::move(e));
    return e;
  }

  ExprPtr primary() {
    const Token& t = peek();
    if (t.kind == TK::Name) {
      next();
      auto e = expr(Expr::Kind::Literal, t.where);
      if (t.text == "true" || t.text == "True") {
        e->value = true;
      } else if (t.text == "false" || t.text == "False") {
        e->value = false;
      } else if (t.text == "none" || t.text == "None") {
        e->value = None{};
      } else {
        e->kind = Expr::Kind::Name;
        e->name = t.text;
      }
      return e;
    }
    if (t.kind == TK::String) {
      auto e = expr(Expr::Kind::Literal, t.where);
      std::string s;
      while (peek().kind == TK::String) s += next().text;  // adjacent strings join
      e->value = std::move(s);
      return e;
    }
    if (t.kind == TK::Int || t.kind == TK::Float) {
      next();
      auto e = expr(Expr::Kind::Literal, t.where);
      try {
        if (t.kind == TK::Int)
          e->value = static_cast<int64_t>(std::stoll(t.text));
        else
          e->value = std::stod(t.text);
      } catch (const std::exception&) {
        fail_at(t.where, "number out of range: " + t.text);
      }
      return e;
    }
    if (at_op("(")) {
      next();
      if (at_op(")")) {
        next();
        return expr(Expr::Kind::List, t.where);
      }
      ExprPtr first = expression();
      if (at_op(")")) {
        next();
        return first;
      }
      auto l = expr(Expr::Kind::List, t.where);
      l->args.push_back(std::move(first));
      while (at_op(",")) {
        next();
        if (at_op(")")) break;
        l->args.push_back(expression());
      }
      expect_op(")");
      return sealed(std::move(l));
    }
    if (at_op("[")) {
      next();
      auto l = expr(Expr::Kind::List, t.where);
      while (!at_op("]")) {
        l->args.push_back(expression());
        if (!at_op("]")) expect_op(",");
      }
      next();
      return sealed(std::move(l));
    }
    if (at_op("{")) {
      next();
      auto d = expr(Expr::Kind::Dict, t.where);
      while (!at_op("}")) {
        d->args.push_back(expression());
        expect_op(":");
        d->args.push_back(expression());
        if (!at_op("}")) expect_op(",");
      }
      next();
      return sealed(std::move(d));
    }
    unexpected("an expression");
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        const Where w = next().where;
        if (peek().kind == TK::Int) {
          auto item = expr(Expr::Kind::Item, w);
          auto key = expr(Expr::Kind::Literal, w);
          const Token& index = next();
          try {
            key->value = static_cast<int64_t>(std::stoll(index.text));
          } catch (const std::exception&) {
            fail_at(index.where, "number out of range: " + index.text);
          }
          item->args.push_back(std::move(e));
          item->args.push_back(std::move(key));
          e = sealed(std::move(item));
          continue;
        }
        auto a = expr(Expr::Kind::Attr, w);
        a->name = name();
        a->args.push_back(std::move(e));
        e = sealed(std::move(a));
      } else if (at_op("[")) {
        e = subscript(std::move(e));
      } else if (at_op("(")) {
        e = call(std::move(e), Expr::Kind::Call, {});
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr obj) {
    const Where w = next().where;  // [
    ExprPtr bounds[3];
    bool slice = false;
    if (!at_op(":")) bounds[0] = expression();
    if (at_op(":")) {
      slice = true;
      next();
      if (!at_op(":") && !at_op("]")) bounds[1] = expression();
      if (at_op(":")) {
        next();
        if (!at_op("]")) bounds[2] = expression();
      }
    }
    expect_op("]");
    auto e = expr(slice ? Expr::Kind::Slice : Expr::Kind::Item, w);
    e->args.push_back(std::move(obj));
    if (!slice && !bounds[0]) fail_at(w, "empty subscript");
    e->args.push_back(std::move(bounds[0]));
    if (slice) {
      e->args.push_back(std::move(bounds[1]));
      e->args.push_back(std::move(bounds[2]));
    }
    return sealed(std::move(e));
  }

  // "(" is next: the arguments of a call, a filter or a test; `head` is args[0].
  ExprPtr call(ExprPtr head, Expr::Kind kind, std::string fname) {
    auto e = expr(kind, head->where);
    e->name = std::move(fname);
    e->args.push_back(std::move(head));
    expect_op("(");
    while (!at_op(")")) {
      if (peek().kind == TK::Name && at_op("=", 1)) {
        std::string k = next().text;
        next();
        e->kwargs.emplace_back(std::move(k), expression());
      } else {
        if (!e->kwargs.empty()) fail_at(peek().where, "a positional argument after a keyword");
        e->args.push_back(expression());
      }
      if (!at_op(")")) expect_op(",");
    }
    next();
    return sealed(std::move(e));
  }

  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        const Where w = next().where;
        std::string f = name();
        while (at_op(".")) {
          next();
          f += '.';
          f += name();
        }
        if (at_op("(")) {
          e = call(std::move(e), Expr::Kind::Filter, std::move(f));
          e->where = w;
        } else {
          auto x = expr(Expr::Kind::Filter, w);
          x->name = std::move(f);
          x->args.push_back(std::move(e));
          e = sealed(std::move(x));
        }
      } else if (at_name("is")) {
        const Where w = next().where;
        bool negated = false;
        if (at_name("not")) {
          next();
          negated = true;
        }
        std::string test = name();
        if (at_op("(")) {
          e = call(std::move(e), Expr::Kind::Test, std::move(test));
        } else {
          auto x = expr(Expr::Kind::Test, w);
          x->name = std::move(test);
          x->args.push_back(std::move(e));
          const Token& a = peek();
          const bool arg_follows =
              (a.kind == TK::Name && a.text != "else" && a.text != "or" && a.text != "and" &&
               a.text != "is" && a.text != "if" && a.text != "not" && a.text != "in") ||
              a.kind == TK::String || a.kind == TK::Int || a.kind == TK::Float || at_op("(") ||
              at_op("[") || at_op("{");
          if (arg_follows) x->args.push_back(postfix(primary()));
          e = sealed(std::move(x));
        }
        e->where = w;
        e->negated = negated;
      } else if (at_op("(")) {
        e = call(std::move(e), Expr::Kind::Call, {});
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
  uintptr_t stack_floor_ = stack_floor();
};

}  // namespace

NodePtr parse(const std::vector<Token>& tokens) {
  return Parser(tokens).root();
}

}  // namespace sandwich::engine::jinja
