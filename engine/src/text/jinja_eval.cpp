#include "text/jinja_eval.h"

#include <cmath>
#include <new>

#include "text/jinja_budget.h"
#include "text/jinja_builtins.h"

namespace sandwich::engine::jinja {
namespace {

// Variables: a for loop's body and a macro's call get their own frame (what they set stays
// there, as in jinja2); if and the template's top level share their enclosing one.
struct Frame {
  Dict vars;
  const Frame* parent = nullptr;

  const Value* find(const std::string& k) const {
    for (const Frame* f = this; f; f = f->parent)
      if (const Value* v = f->vars.find(k)) return v;
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(RenderBudget& budget, Frame& globals)
      : budget_(budget), lim_(budget.limits()), globals_(globals) {}

  void exec_body(const Body& body, Frame& f, std::string& out, Flow& flow) {
    for (const NodePtr& n : body) {
      exec(*n, f, out, flow);
      if (flow != Flow::Normal) return;
    }
  }

 private:
  void step(Where w) {
    try {
      budget_.step();
    } catch (const ValueError& e) {
      fail_at(w, e.what());
    }
  }
  // Text written to an output (the render's, a macro's, a block set's): counted as created.
  void write(std::string& out, std::string_view text, Where w) {
    try {
      budget_.charge(text.size(), "the output");
    } catch (const ValueError& e) {
      fail_at(w, e.what());
    }
    check_size(out.size() + text.size(), w);
    out += text;
  }
  void check_size(size_t n, Where w) const {
    if (n > lim_.max_output)
      fail_at(w, "the output grew past " + std::to_string(lim_.max_output) + " bytes");
  }

  void exec(const Node& n, Frame& f, std::string& out, Flow& flow) {
    step(n.where);
    try {
      const DepthScope depth(budget_);
      exec_unchecked(n, f, out, flow);
    } catch (const ValueError& e) {
      fail_at(n.where, e.what());
    }
  }

  void exec_unchecked(const Node& n, Frame& f, std::string& out, Flow& flow) {
    switch (n.kind) {
      case Node::Kind::Root:
        exec_body(n.body, f, out, flow);
        return;
      case Node::Kind::Text:
        write(out, n.text, n.where);
        break;
      case Node::Kind::Output: {
        const Value v = eval(*n.expr, f);
        if (v.is_string()) {
          write(out, v.as_string(), n.where);
        } else {
          try {
            write(out, to_str(v), n.where);
          } catch (const ValueError& e) {
            fail_at(n.where, e.what());
          }
        }
        break;
      }
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (!cond || eval(*cond, f).truthy()) {
            exec_body(body, f, out, flow);
            break;
          }
        break;
      case Node::Kind::For:
        exec_for(n, f, out);
        break;
      case Node::Kind::Set:
        exec_set(n, f);
        break;
      case Node::Kind::Macro:
        define_macro(n, f);
        break;
      case Node::Kind::Break:
        flow = Flow::Break;
        break;
      case Node::Kind::Continue:
        flow = Flow::Continue;
        break;
    }
    check_size(out.size(), n.where);
  }

  void assign(Frame& f, const std::vector<std::string>& targets, const Value& v, Where w) {
    charge(value_bytes(v), "a variable", w);
    if (targets.size() == 1) {
      f.vars.set(targets[0], v);
      return;
    }
    if (!v.is_list() || v.as_list().size() != targets.size())
      fail_at(w, "cannot unpack " + v.type_name() + " into " + std::to_string(targets.size()) +
                     " names");
    for (size_t i = 0; i < targets.size(); ++i) f.vars.set(targets[i], v.as_list()[i]);
  }

  void exec_for(const Node& n, Frame& f, std::string& out) {
    const Value seq = eval(*n.expr, f);
    if (seq.is_none()) fail_at(n.expr->where, "'NoneType' object is not iterable");
    List items;
    try {
      items = iterate(seq);
    } catch (const ValueError& e) {
      fail_at(n.expr->where, e.what());
    }
    if (n.filter) {
      List kept;
      for (const Value& item : items) {
        step(n.where);
        Frame probe{{}, &f};
        assign(probe, n.targets, item, n.where);
        if (eval(*n.filter, probe).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      Flow flow = Flow::Normal;
      exec_body(n.else_body, f, out, flow);
      return;
    }
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      step(n.where);
      Frame body{{}, &f};
      // The loop variable holds copies of the item and its neighbours.
      charge(add_bytes(add_bytes(1024, value_bytes(items[i])),
                       add_bytes(i > 0 ? value_bytes(items[i - 1]) : 0,
                                 i + 1 < len ? value_bytes(items[i + 1]) : 0)),
             "the loop variable", n.where);
      auto loop = std::make_shared<Dict>();
      loop->items = {{"index", i + 1},
                     {"index0", i},
                     {"revindex", len - i},
                     {"revindex0", len - i - 1},
                     {"first", i == 0},
                     {"last", i == len - 1},
                     {"length", len},
                     {"previtem", i > 0 ? items[i - 1] : Value(Undefined{"previtem"})},
                     {"nextitem", i + 1 < len ? items[i + 1] : Value(Undefined{"nextitem"})}};
      body.vars.set("loop", Value(loop));
      assign(body, n.targets, items[i], n.where);
      Flow flow = Flow::Normal;
      exec_body(n.body, body, out, flow);
      if (flow == Flow::Break) break;
    }
  }

  void exec_set(const Node& n, Frame& f) {
    Value v;
    if (n.expr) {
      v = eval(*n.expr, f);
    } else {
      std::string captured;
      Flow flow = Flow::Normal;
      exec_body(n.body, f, captured, flow);
      v = std::move(captured);
    }
    if (!n.attr.empty()) {
      const Value* ns = f.find(n.targets[0]);
      if (!ns || !ns->is_dict() || !ns->as_dict().is_namespace)
        fail_at(n.where, "cannot set an attribute of '" + n.targets[0] + "': not a namespace()");
      // Checked with the value in place: a namespace set into itself is a cycle, undone here.
      ns->as_dict().set(n.attr, std::move(v));
      try {
        check_nesting_of(*ns);
      } catch (const ValueError& e) {
        ns->as_dict().set(n.attr, None{});
        fail_at(n.where, e.what());
      }
      return;
    }
    assign(f, n.targets, v, n.where);
  }

  void define_macro(const Node& n, Frame& f) {
    const Node* node = &n;
    auto call = [this, node](const CallArgs& a) -> Value {
      if (depth_ + 1 > lim_.max_call_depth)
        fail_at(node->where, "macros call each other deeper than " +
                                 std::to_string(lim_.max_call_depth) + " levels");
      const DepthScope nesting(budget_);
      ++depth_;
      struct Leave {
        int& d;
        ~Leave() { --d; }
      } leave{depth_};
      Frame frame{{}, &globals_};
      if (a.positional.size() > node->params.size())
        throw ValueError("macro '" + node->text + "' takes " + std::to_string(node->params.size()) +
                         " arguments");
      for (const Value& v : a.positional) charge_bytes(value_bytes(v), "a macro argument");
      for (const auto& kv : a.keyword) charge_bytes(value_bytes(kv.second), "a macro argument");
      for (size_t i = 0; i < node->params.size(); ++i) {
        const auto& [name, def] = node->params[i];
        if (i < a.positional.size())
          frame.vars.set(name, a.positional[i]);
        else if (const Value* kv = a.kw(name))
          frame.vars.set(name, *kv);
        else
          frame.vars.set(name, def ? eval(*def, frame) : Value(Undefined{name}));
      }
      std::string out;
      Flow flow = Flow::Normal;
      exec_body(node->body, frame, out, flow);
      return out;
    };
    f.vars.set(n.text, Value(std::make_shared<Callable>(Callable{n.text, call})));
  }

  Value eval(const Expr& x, const Frame& f) {
    step(x.where);
    try {
      const DepthScope depth(budget_);
      Value v = eval_unchecked(x, f);
      // Every value an expression yields is a new copy (strings are copied, lists and dicts
      // shared): counted, so that no number of them can add up to more than the budget. The
      // ones passed through from a subexpression were counted there.
      if (x.kind != Expr::Kind::Ternary &&
          !(x.kind == Expr::Kind::Binary && (x.name == "and" || x.name == "or")))
        budget_.charge(value_bytes(v), "a value");
      return v;
    } catch (const ValueError& e) {
      fail_at(x.where, e.what());
    }
  }

  void charge(size_t bytes, const char* what, Where w) {
    try {
      budget_.charge(bytes, what);
    } catch (const ValueError& e) {
      fail_at(w, e.what());
    }
  }

  CallArgs call_args(const Expr& x, const Frame& f) {
    CallArgs a;
    for (size_t i = 1; i < x.args.size(); ++i) a.positional.push_back(eval(*x.args[i], f));
    for (const auto& [k, e] : x.kwargs) a.keyword.emplace_back(k, eval(*e, f));
    return a;
  }

  [[noreturn]] static void undefined_error(const Value& v) {
    throw ValueError("'" + std::get<Undefined>(v.v).name + "' is undefined");
  }

  Value eval_unchecked(const Expr& x, const Frame& f) {
    switch (x.kind) {
      case Expr::Kind::Literal:
        return x.value;
      case Expr::Kind::Name: {
        const Value* v = f.find(x.name);
        return v ? *v : Value(Undefined{x.name});
      }
      case Expr::Kind::Attr: {
        const Value obj = eval(*x.args[0], f);
        return get_attr(obj, x.name);
      }
      case Expr::Kind::Item: {
        const Value obj = eval(*x.args[0], f);
        return get_item(obj, eval(*x.args[1], f));
      }
      case Expr::Kind::Slice:
        return slice(x, f);
      case Expr::Kind::Call:
        return call(x, f);
      case Expr::Kind::Filter: {
        const Value in = eval(*x.args[0], f);
        const Value out = apply_filter(x.name, in, call_args(x, f));
        check_value(out, x.where);
        return out;
      }
      case Expr::Kind::Test: {
        const Value in = eval(*x.args[0], f);
        return apply_test(x.name, in, call_args(x, f)) != x.negated;
      }
      case Expr::Kind::Unary: {
        const Value v = eval(*x.args[0], f);
        if (x.name == "not") return !v.truthy();
        if (v.is_undefined()) undefined_error(v);
        if (!v.is_number() && !v.is_bool())
          throw ValueError("bad operand type for unary " + x.name + ": '" + v.type_name() + "'");
        if (x.name == "+") return v.is_bool() ? Value(int64_t{v.as_bool()}) : v;
        if (v.is_float()) return -v.as_number();
        return checked_neg(v.is_bool() ? int64_t{v.as_bool()} : v.as_int(), "unary -");
      }
      case Expr::Kind::Binary:
        return binary(x, f);
      case Expr::Kind::Ternary:
        if (eval(*x.args[1], f).truthy()) return eval(*x.args[0], f);
        return x.args[2] ? eval(*x.args[2], f) : Value(Undefined{"else"});
      case Expr::Kind::List: {
        List l;
        for (const ExprPtr& e : x.args) l.push_back(eval(*e, f));
        charge_bytes(list_bytes(l), "a list");
        Value v(std::move(l));
        check_nesting_of(v);
        return v;
      }
      case Expr::Kind::Dict: {
        auto d = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < x.args.size(); i += 2) {
          const Value k = eval(*x.args[i], f);
          if (!k.is_string()) throw ValueError("dict keys must be strings here");
          charge_steps(static_cast<int64_t>(d->items.size()));  // set() looks at every key
          d->set(k.as_string(), eval(*x.args[i + 1], f));
        }
        charge_bytes(dict_bytes(*d), "a dict");
        Value v(std::move(d));
        check_nesting_of(v);
        return v;
      }
    }
    return {};
  }

  // What a builtin returned: each one checks what it builds before building it; this is the
  // last word on the per-value limit.
  void check_value(const Value& v, Where w) const {
    if (v.is_string()) check_size(v.as_string().size(), w);
    if (v.is_list()) check_size(mul_bytes(v.as_list().size(), sizeof(Value)), w);
  }

  static Value get_attr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) undefined_error(obj);
    if (obj.is_dict())
      if (const Value* v = obj.as_dict().find(name)) return *v;
    return Undefined{name};
  }

  static Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) undefined_error(obj);
    if (obj.is_dict()) {
      if (!key.is_string()) return Undefined{to_str(key)};
      const Value* v = obj.as_dict().find(key.as_string());
      return v ? *v : Value(Undefined{key.as_string()});
    }
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
      const int64_t k = key.is_bool() ? int64_t{key.as_bool()} : key.as_int();
      if (obj.is_list()) {
        const List& l = obj.as_list();
        const int64_t i = k < 0 ? k + static_cast<int64_t>(l.size()) : k;
        if (i < 0 || i >= static_cast<int64_t>(l.size())) return Undefined{std::to_string(k)};
        return l[static_cast<size_t>(i)];
      }
      const std::string& s = obj.as_string();
      const int64_t n = static_cast<int64_t>(code_point_count(s));
      const int64_t i = k < 0 ? k + n : k;
      if (i < 0 || i >= n) return Undefined{std::to_string(k)};
      const size_t b = code_point_offset(s, static_cast<size_t>(i));
      return s.substr(b, code_point_offset(s, static_cast<size_t>(i) + 1) - b);
    }
    if (key.is_string()) return get_attr(obj, key.as_string());
    return Undefined{to_str(key)};
  }

  Value slice(const Expr& x, const Frame& f) {
    const Value obj = eval(*x.args[0], f);
    if (obj.is_undefined()) undefined_error(obj);
    int64_t bound[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int i = 0; i < 3; ++i) {
      if (!x.args[static_cast<size_t>(i) + 1]) continue;
      const Value b = eval(*x.args[static_cast<size_t>(i) + 1], f);
      if (b.is_none()) continue;
      if (!b.is_int()) throw ValueError("slice indices must be integers or None");
      bound[i] = b.as_int();
      given[i] = true;
    }
    const int64_t step = bound[2];
    if (step == 0) throw ValueError("slice step cannot be zero");
    if (!obj.is_list() && !obj.is_string())
      throw ValueError("'" + obj.type_name() + "' object is not subscriptable");
    const int64_t n = static_cast<int64_t>(obj.is_list() ? obj.as_list().size()
                                                         : code_point_count(obj.as_string()));
    // Python's slice.indices(); bounds near the int64 limits clamp, never overflow.
    auto fix = [&](int64_t v, bool has, int64_t dflt) {
      if (!has) return dflt;
      if (v < 0) v = v < -n ? -n - 1 : v + n;
      if (step > 0) return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, -1, n - 1);
    };
    const int64_t start = fix(bound[0], given[0], step > 0 ? 0 : n - 1);
    const int64_t stop = fix(bound[1], given[1], step > 0 ? n : -1);
    // How many items: counted in unsigned arithmetic, as start and stop lie in [-1, n].
    const uint64_t span = step > 0 ? (stop > start ? static_cast<uint64_t>(stop - start) : 0)
                                   : (start > stop ? static_cast<uint64_t>(start - stop) : 0);
    const uint64_t mag = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    const uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
    auto index = [&](uint64_t k) {  // start + k * step, within [0, n) for k < count
      return static_cast<size_t>(step > 0 ? static_cast<uint64_t>(start) + k * mag
                                          : static_cast<uint64_t>(start) - k * mag);
    };
    budget_.step(static_cast<int64_t>(count));
    if (obj.is_list()) {
      const List& l = obj.as_list();
      size_t bytes = sizeof(List);
      for (uint64_t k = 0; k < count; ++k) bytes = add_bytes(bytes, value_bytes(l[index(k)]));
      charge_bytes(bytes, "a slice");
      List out;
      out.reserve(count);
      for (uint64_t k = 0; k < count; ++k) out.push_back(l[index(k)]);
      return out;
    }
    const std::string& s = obj.as_string();
    if (mag == 1 && step > 0) {  // the common case, without an index of every code point
      const size_t b = code_point_offset(s, static_cast<size_t>(start));
      return s.substr(b, code_point_offset(s, static_cast<size_t>(stop)) - b);
    }
    charge_bytes(mul_bytes(s.size(), sizeof(size_t)), "a slice");
    const std::vector<size_t> cp = code_points(s);
    std::string out;
    for (uint64_t k = 0; k < count; ++k) {
      const size_t i = index(k);
      const size_t e = i + 1 < cp.size() ? cp[i + 1] : s.size();
      out.append(s, cp[i], e - cp[i]);
    }
    return out;
  }

  Value call(const Expr& x, const Frame& f) {
    const Expr& callee = *x.args[0];
    if (callee.kind == Expr::Kind::Attr) {
      const Value obj = eval(*callee.args[0], f);
      if (has_method(obj, callee.name) && !(obj.is_dict() && obj.as_dict().find(callee.name))) {
        const Value out = *call_method(obj, callee.name, call_args(x, f));
        check_value(out, x.where);
        return out;
      }
      const Value fn = get_attr(obj, callee.name);
      return invoke(fn, x, f);
    }
    return invoke(eval(callee, f), x, f);
  }

  Value invoke(const Value& fn, const Expr& x, const Frame& f) {
    if (fn.is_undefined()) undefined_error(fn);
    if (!fn.is_callable()) throw ValueError("'" + fn.type_name() + "' object is not callable");
    const Value out = fn.as_callable().call(call_args(x, f));
    check_value(out, x.where);
    return out;
  }

  static bool contains(const Value& hay, const Value& needle) {
    if (hay.is_string()) {
      if (!needle.is_string())
        throw ValueError("'in <string>' requires string as left operand, not " +
                         needle.type_name());
      return find_text(hay.as_string(), needle.as_string()) != std::string::npos;
    }
    if (hay.is_dict()) return needle.is_string() && hay.as_dict().find(needle.as_string());
    if (hay.is_list()) {
      charge_steps(static_cast<int64_t>(hay.as_list().size()));
      for (const Value& v : hay.as_list())
        if (values_equal(v, needle)) return true;
      return false;
    }
    if (hay.is_undefined()) undefined_error(hay);
    throw ValueError("argument of type '" + hay.type_name() + "' is not iterable");
  }

  Value binary(const Expr& x, const Frame& f) {
    const std::string& op = x.name;
    if (op == "and") {
      Value a = eval(*x.args[0], f);
      return a.truthy() ? eval(*x.args[1], f) : a;
    }
    if (op == "or") {
      Value a = eval(*x.args[0], f);
      return a.truthy() ? a : eval(*x.args[1], f);
    }
    const Value a = eval(*x.args[0], f);
    const Value b = eval(*x.args[1], f);
    if (op == "~") {
      std::string s = to_str(a);
      append_checked(s, to_str(b), "'~'");
      return s;
    }
    if (op == "==") return values_equal(a, b);
    if (op == "!=") return !values_equal(a, b);
    if (op == "in") return contains(b, a);
    if (op == "not in") return !contains(b, a);
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      CallArgs c;
      c.positional.push_back(b);
      return apply_test(op, a, c);
    }
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        check_bytes(add_bytes(a.as_string().size(), b.as_string().size()), "'+'");
        return a.as_string() + b.as_string();
      }
      if (a.is_list() && b.is_list()) {
        charge_bytes(add_bytes(list_bytes(a.as_list()), list_bytes(b.as_list())), "'+'");
        List l = a.as_list();
        l.insert(l.end(), b.as_list().begin(), b.as_list().end());
        return l;
      }
    }
    if (op == "%" && a.is_string()) {
      return py_format(a.as_string(), b.is_list() ? b.as_list() : List{b});
    }
    if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
      const Value& seq = a.is_int() ? b : a;
      const Value& times = a.is_int() ? a : b;
      if (!times.is_int() || !(seq.is_string() || seq.is_list()))
        throw ValueError("can't multiply sequence by non-int of type '" + times.type_name() + "'");
      const size_t n = static_cast<size_t>(std::max<int64_t>(times.as_int(), 0));
      if (seq.is_string()) {
        // A repeated empty string stays empty however often: no work to count.
        const std::string& unit = seq.as_string();
        check_bytes(mul_bytes(n, unit.size()), "'*'");
        std::string s;
        if (!unit.empty() && n > 0) {  // by doubling: a one-character unit is the common case
          s.reserve(n * unit.size());
          s = unit;
          while (s.size() * 2 <= n * unit.size()) s += s;
          s.append(s, 0, n * unit.size() - s.size());
        }
        return s;
      }
      const List& unit = seq.as_list();
      if (unit.empty()) return List{};
      charge_bytes(mul_bytes(n, list_bytes(unit)), "'*'");
      List l;
      l.reserve(n * unit.size());
      for (size_t i = 0; i < n; ++i) l.insert(l.end(), unit.begin(), unit.end());
      return l;
    }
    auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
    if (!numeric(a) || !numeric(b))
      throw ValueError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                       b.type_name() + "'");
    auto as_i = [](const Value& v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); };
    const bool ints = !a.is_float() && !b.is_float();
    const double da = a.is_bool() ? double(a.as_bool()) : a.as_number();
    const double db = b.is_bool() ? double(b.as_bool()) : b.as_number();
    if (op == "/") {
      if (db == 0) throw ValueError("division by zero");
      return da / db;
    }
    if (op == "//" || op == "%") {
      if (db == 0) throw ValueError(op == "%" ? "modulo by zero" : "integer division by zero");
      if (ints) {
        const int64_t p = as_i(a), q = as_i(b);
        if (q == -1) {  // p / -1 overflows for the smallest int64 (and traps on x86)
          if (op == "%") return int64_t{0};
          return checked_neg(p, "'//'");
        }
        int64_t d = p / q, m = p % q;
        if (m != 0 && ((m < 0) != (q < 0))) {
          --d;
          m += q;
        }
        return op == "//" ? d : m;
      }
      const double d = std::floor(da / db);
      return op == "//" ? d : da - d * db;
    }
    if (op == "**") {
      if (ints && as_i(b) >= 0) {  // exact, by squaring
        int64_t base = as_i(a), e = as_i(b), r = 1;
        while (e > 0) {
          if (e & 1) r = checked_mul(r, base, "'**'");
          e >>= 1;
          if (e > 0) base = checked_mul(base, base, "'**'");
        }
        return r;
      }
      if (da == 0 && db < 0) throw ValueError("0.0 cannot be raised to a negative power");
      return std::pow(da, db);
    }
    if (ints) {
      const int64_t p = as_i(a), q = as_i(b);
      return op == "+"   ? checked_add(p, q, "'+'")
             : op == "-" ? checked_sub(p, q, "'-'")
                         : checked_mul(p, q, "'*'");
    }
    return op == "+" ? da + db : op == "-" ? da - db : da * db;
  }

  RenderBudget& budget_;
  const RenderLimits& lim_;
  Frame& globals_;
  int depth_ = 0;  // macro calls
};

}  // namespace

std::string render_tree(const Node& root, const nlohmann::ordered_json& context,
                        const RenderLimits& limits) {
  if (!context.is_object()) throw Error("the render context must be a JSON object");
  Frame globals;
  add_globals(globals.vars);
  for (const auto& [k, v] : context.items()) globals.vars.set(k, from_json(v));
  // The template's top level sets its own variables, as jinja2's render context does.
  Frame top{{}, &globals};
  RenderBudget budget(limits);
  Renderer r(budget, top);
  std::string out;
  Flow flow = Flow::Normal;
  try {
    r.exec_body(root.body, top, out, flow);
  } catch (const ValueError& e) {
    throw Error(e.what());  // every error the caller sees is an Error
  } catch (const std::bad_alloc&) {
    // The budget keeps renders far below the memory any machine has; this is the last resort.
    throw Error("the template ran out of memory while rendering");
  } catch (const std::length_error&) {
    throw Error("the template built a value too long to hold");
  }
  return out;
}

}  // namespace sandwich::engine::jinja
