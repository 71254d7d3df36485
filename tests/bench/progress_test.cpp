// The progress line of a run: its text, and that it is written only where asked (on a terminal)
// and erased before the next output.
#include <gtest/gtest.h>

#include "bench/progress.h"

namespace sandwich::bench {
namespace {

TEST(BenchProgress, TheLineSaysDoneFailedTotalElapsedAndTheStep) {
  EXPECT_EQ(progress_text("sandwich", "2 req/s", {120, 3, 200, 12.34}),
            "[sandwich] 2 req/s: 120 / 200 done, 3 failed, 12.3 s");
  EXPECT_EQ(progress_text("llama", "probe 3, all at once", {0, 0, 5, 0}),
            "[llama] probe 3, all at once: 0 / 5 done, 0 failed, 0.0 s");
}

TEST(BenchProgress, WritesInPlaceOnlyWhenEnabled) {
  testing::internal::CaptureStderr();
  TerminalProgress off(false);
  off.update("a", "1 req/s", {1, 0, 2, 0.5});
  off.clear();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  testing::internal::CaptureStderr();
  TerminalProgress on(true);
  on.update("a", "1 req/s", {1, 0, 3, 0.5});
  on.update("a", "1 req/s", {2, 1, 3, 0.6});  // within 100 ms: skipped
  on.update("a", "1 req/s", {3, 1, 3, 0.7});  // the last: always shown
  on.clear();
  on.clear();  // nothing left to erase
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "\r[a] 1 req/s: 1 / 3 done, 0 failed, 0.5 s\033[K"
            "\r[a] 1 req/s: 3 / 3 done, 1 failed, 0.7 s\033[K\r\033[K");
}

}  // namespace
}  // namespace sandwich::bench
