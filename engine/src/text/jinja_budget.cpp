#include "text/jinja_budget.h"

#include <pthread.h>

#include <cmath>

namespace sandwich::engine::jinja {
namespace {

thread_local RenderBudget* current_budget = nullptr;

// The stack a render must leave unused: what the deepest builtin (sorting, printing a value
// 256 levels deep) and a sanitizer's bigger frames may still take below the last check.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackMargin = 1u << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kStackMargin = 1u << 20;
#else
constexpr size_t kStackMargin = 256u << 10;
#endif
#else
constexpr size_t kStackMargin = 256u << 10;
#endif

std::string mib(size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

uintptr_t stack_floor() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* lo = nullptr;
  size_t size = 0;
  const int rc = pthread_attr_getstack(&attr, &lo, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || !lo) return 0;
  return reinterpret_cast<uintptr_t>(lo) + std::min(kStackMargin, size / 2);
}

bool past_stack_floor(uintptr_t floor) {
  return floor && reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) < floor;
}

RenderBudget::RenderBudget(const RenderLimits& limits)
    : lim_(limits), outer_(current_budget), stack_floor_(stack_floor()) {
  current_budget = this;
}

RenderBudget::~RenderBudget() {
  current_budget = outer_;
}

RenderBudget* RenderBudget::current() {
  return current_budget;
}

void RenderBudget::step(int64_t n) {
  steps_ += n;
  if (steps_ > lim_.max_steps)
    throw ValueError("the template ran too long (more than " + std::to_string(lim_.max_steps) +
                     " steps): does it loop without end?");
}

void RenderBudget::charge(size_t bytes, const char* what) {
  check_bytes(bytes, what);
  bytes_ = add_bytes(bytes_, bytes);
  if (bytes_ > lim_.max_total_bytes)
    throw ValueError(std::string(what) + ": the template created more than " +
                     mib(lim_.max_total_bytes) + " of values in one render");
}

void RenderBudget::enter() {
  if (++depth_ > lim_.max_depth) {
    --depth_;
    throw ValueError("the template nests statements, expressions and macro calls deeper than " +
                     std::to_string(lim_.max_depth) + " levels");
  }
  if (past_stack_floor(stack_floor_)) {
    --depth_;
    throw ValueError("the template nests too deep for this thread's stack");
  }
}

size_t add_bytes(size_t a, size_t b) {
  size_t r;
  return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

size_t mul_bytes(size_t a, size_t b) {
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

size_t value_bytes(const Value& v) {
  return sizeof(Value) + (v.is_string() ? v.as_string().size() : 0);
}

size_t list_bytes(const List& l) {
  size_t n = sizeof(List);
  for (const Value& v : l) n = add_bytes(n, value_bytes(v));
  return n;
}

size_t dict_bytes(const Dict& d) {
  size_t n = sizeof(Dict);
  for (const auto& [k, v] : d.items)
    n = add_bytes(n, add_bytes(sizeof(std::string) + k.size(), value_bytes(v)));
  return n;
}

void charge_bytes(size_t bytes, const char* what) {
  if (RenderBudget* b = RenderBudget::current())
    b->charge(bytes, what);
  else
    check_bytes(bytes, what);
}

void check_bytes(size_t bytes, const char* what) {
  static const RenderLimits defaults;
  const RenderBudget* b = RenderBudget::current();
  const size_t limit = b ? b->limits().max_output : defaults.max_output;
  if (bytes > limit)
    throw ValueError(std::string(what) + ": a value of " +
                     (bytes == SIZE_MAX ? std::string("too many") : std::to_string(bytes)) +
                     " bytes, more than the limit of " + std::to_string(limit));
}

void append_checked(std::string& out, std::string_view piece, const char* what) {
  check_bytes(add_bytes(out.size(), piece.size()), what);
  out.append(piece);
}

void charge_steps(int64_t n) {
  if (RenderBudget* b = RenderBudget::current()) b->step(n);
}

void integer_overflow(const char* what) {
  throw ValueError(std::string("integer overflow in ") + what);
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) integer_overflow(what);
  return r;
}

int64_t checked_sub(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) integer_overflow(what);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) integer_overflow(what);
  return r;
}

int64_t checked_neg(int64_t a, const char* what) {
  return checked_sub(0, a, what);
}

int64_t checked_to_int(double d, const char* what) {
  // 2^63 is exact as a double; every double below it in magnitude truncates into range.
  if (!std::isfinite(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
    integer_overflow(what);
  return static_cast<int64_t>(d);
}

}  // namespace sandwich::engine::jinja
