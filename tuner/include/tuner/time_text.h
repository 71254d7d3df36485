#pragma once
// Times as the tuner's progress lines and files write them.
#include <string>

namespace sandwich::tuner {

// Elapsed or remaining seconds as "m:ss" (minutes unbounded: "75:03"); negative is "0:00".
std::string clock_text(double seconds);
// The current time in UTC, ISO 8601: "2026-01-31T12:00:00Z".
std::string utc_now_text();

}  // namespace sandwich::tuner
