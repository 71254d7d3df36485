#pragma once
// What one render may spend, where every part of the interpreter reaches it: the bytes of the
// values it creates (each one, and all of them summed), the steps it takes, how deep it nests
// and how much of its thread's stack is left. A template comes with a model file from anywhere:
// whatever it does must end as a template error, not as a crash or gigabytes of memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/jinja_value.h"

namespace sandwich::engine::jinja {

// The render running on this thread (the builtins find it here, not in their arguments).
// Without one, values are held to the default RenderLimits' per-value size alone.
class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  static RenderBudget* current();

  const RenderLimits& limits() const { return lim_; }
  // Throws ValueError when the render runs past max_steps; `n` steps of work otherwise.
  void step(int64_t n = 1);
  // A value of `bytes` about to be built: throws ValueError over the per-value limit or when
  // the render's bytes created would pass max_total_bytes; counts them otherwise.
  void charge(size_t bytes, const char* what);
  // One level deeper (statement, expression or macro call): throws ValueError past max_depth
  // or when less than a safe margin of this thread's stack is left.
  void enter();
  void leave() { --depth_; }

 private:
  const RenderLimits& lim_;
  RenderBudget* outer_;
  int64_t steps_ = 0;
  size_t bytes_ = 0;
  int depth_ = 0;
  uintptr_t stack_floor_ = 0;  // below this address the stack is too short to go on
};

// The lowest address this thread's stack may reach before a render or parse stops: its real
// bottom (pthread_getattr_np) plus a safe margin; 0 when it cannot be known.
uintptr_t stack_floor();
// Whether the caller's frame is below `floor` (the stack grows down on every platform we build
// for).
bool past_stack_floor(uintptr_t floor);

// Counts one level of nesting for as long as it lives.
class DepthScope {
 public:
  explicit DepthScope(RenderBudget& b) : b_(b) { b_.enter(); }
  ~DepthScope() { b_.leave(); }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  RenderBudget& b_;
};

// Bytes arithmetic that saturates instead of wrapping.
size_t add_bytes(size_t a, size_t b);
size_t mul_bytes(size_t a, size_t b);
// What a copy of `v` takes: the Value and a string's characters (lists and dicts are shared).
size_t value_bytes(const Value& v);
// What a list of these elements takes, and a dict of these items.
size_t list_bytes(const List& l);
size_t dict_bytes(const Dict& d);

// charge() on the current render, if any (the per-value limit alone otherwise).
void charge_bytes(size_t bytes, const char* what);
// Throws ValueError when a value of `bytes` would be over the per-value limit; counts nothing
// (for strings built piece by piece, charged once whole).
void check_bytes(size_t bytes, const char* what);
// `out += piece`, refused before it would make `out` too big.
void append_checked(std::string& out, std::string_view piece, const char* what);
// Work inside a builtin (an element visited, compared or copied), counted as steps.
void charge_steps(int64_t n);

// Python's int arithmetic on int64: a result out of range is a ValueError ("integer overflow
// in <what>"), never undefined behaviour.
[[noreturn]] void integer_overflow(const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);
int64_t checked_sub(int64_t a, int64_t b, const char* what);
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_neg(int64_t a, const char* what);
// A float as an int (truncated, as Python's int()); NaN, inf and out of range are errors.
int64_t checked_to_int(double d, const char* what);

}  // namespace sandwich::engine::jinja
