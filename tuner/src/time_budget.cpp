#include "tuner/time_budget.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace sandwich::tuner {

double parse_duration(const std::string& text) {
  const std::invalid_argument bad(
      "a duration is a number with h, m or s, such as 30m, 900s or "
      "1h30m; got '" +
      text + "'");
  double total = 0;
  size_t i = 0;
  if (text.empty()) throw bad;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
      ++j;
    if (j == i) throw bad;
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(text.substr(i, j - i), &used);
      if (used != j - i) throw bad;
    } catch (const std::logic_error&) {
      throw bad;
    }
    double unit = 1;
    if (j < text.size()) {
      const char u = text[j++];
      if (u == 'h')
        unit = 3600;
      else if (u == 'm')
        unit = 60;
      else if (u != 's')
        throw bad;
    } else if (i != 0) {
      throw bad;  // "1h30" is ambiguous
    }
    total += v * unit;
    i = j;
  }
  if (!(total > 0) || !std::isfinite(total)) throw bad;
  return total;
}

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

TimeBudget::TimeBudget(double seconds, double spent)
    : total_(seconds), spent_(spent), start_(std::chrono::steady_clock::now()) {}

double TimeBudget::used() const {
  return spent_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace sandwich::tuner
