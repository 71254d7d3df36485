#include "tuner/time_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace sandwich::tuner {

std::string clock_text(double seconds) {
  const long t = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

std::string utc_now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace sandwich::tuner
