// The goodput estimate that chooses a plan's configuration pair, on figures worked by hand.
#include "tuner/goodput_estimate.h"

#include <gtest/gtest.h>

namespace sandwich::tuner {
namespace {

// 1 ms per prompt token, 10 ms per decode step whatever the batch; requests of 100 in, 10 out.
ServiceTimes flat_times() {
  ServiceTimes t;
  t.prefill_ms_per_token = 1;
  t.decode_ms_1 = t.decode_ms_batch = 10;
  t.decode_batch = 8;
  return t;
}
const std::vector<LengthPair> kTrace(4, LengthPair{100, 10});

TEST(GoodputEstimate, LoadFiguresFollowTheModel) {
  // At 5 req/s prefill takes half the server: TPOT doubles to 20 ms, n = 5 * 10 * 0.02 = 1,
  // and a request waits rho S / (2 (1 - rho)) with S = 100 + 10 ms, rho = 0.55.
  const LoadEstimate e = estimate_load(flat_times(), kTrace, {}, 1.0, 5);
  EXPECT_FALSE(e.overloaded);
  EXPECT_NEAR(e.tpot_ms, 20, 1e-6);
  EXPECT_NEAR(e.batch, 1, 1e-6);
  const double wait = 0.55 * 110 / (2 * 0.45);
  EXPECT_NEAR(e.ttft_ms, wait + 110, 1e-6);
  EXPECT_TRUE(estimate_load(flat_times(), kTrace, {}, 1.0, 10).overloaded);  // prefill saturates
}

TEST(GoodputEstimate, TheBindingLimitSetsTheRate) {
  const GoodputEstimate tpot = estimate_goodput(flat_times(), kTrace, {}, {1000, 20, 0.9});
  EXPECT_NEAR(tpot.rate, 5, 1e-3);  // TPOT = 10 / (1 - 0.1 L) <= 20
  EXPECT_EQ(tpot.limited_by, "TPOT");
  EXPECT_NEAR(tpot.at_rate.tpot_ms, 20, 1e-2);

  ServingLimits one_seq;
  one_seq.max_num_seqs = 1;  // n = 0.1 L / (1 - 0.1 L) <= 1
  const GoodputEstimate batch = estimate_goodput(flat_times(), kTrace, one_seq, {1e6, 1e6, 0.9});
  EXPECT_NEAR(batch.rate, 5, 1e-3);
  EXPECT_EQ(batch.limited_by, "the batch limit");

  // 100 ms of prefill alone misses a 90 ms TTFT at any rate.
  const GoodputEstimate none = estimate_goodput(flat_times(), kTrace, {}, {90, 1000, 0.9});
  EXPECT_EQ(none.rate, 0);
  EXPECT_EQ(none.limited_by, "TTFT");
}

TEST(GoodputEstimate, FasterStepsNeverLowerIt) {
  const SloLimits slo{400, 30, 0.9};
  const double base = estimate_goodput(flat_times(), kTrace, {}, slo).rate;
  ServiceTimes faster_prefill = flat_times(), slower_decode = flat_times();
  faster_prefill.prefill_ms_per_token = 0.5;
  slower_decode.decode_ms_batch = 40;  // D(b) = 10 + 30 (b - 1) / 7
  EXPECT_GT(base, 0);
  EXPECT_GT(estimate_goodput(faster_prefill, kTrace, {}, slo).rate, base);
  EXPECT_LT(estimate_goodput(slower_decode, kTrace, {}, slo).rate, base);
  EXPECT_NEAR(slower_decode.decode_ms(8), 40, 1e-9);
  EXPECT_NEAR(slower_decode.decode_ms(0.5), 10, 1e-9);
}

TEST(GoodputEstimate, TtftIsTheAttainmentQuantileOfTheTrace) {
  std::vector<LengthPair> trace;
  for (int i = 1; i <= 10; ++i) trace.push_back({i * 10, 1});
  // At no load TTFT is the prefill alone: the P90 of 10..100 ms is 90 ms, the P50 50 ms.
  EXPECT_NEAR(estimate_load(flat_times(), trace, {}, 0.9, 0).ttft_ms, 90, 1e-9);
  EXPECT_NEAR(estimate_load(flat_times(), trace, {}, 0.5, 0).ttft_ms, 50, 1e-9);
  // Chunks of 32 tokens: a 100-token prompt is 4 chunks, each may wait for a decode step.
  ServingLimits chunked;
  chunked.prefill_chunk = 32;
  const LoadEstimate e = estimate_load(flat_times(), trace, chunked, 1.0, 2);
  EXPECT_GT(e.ttft_ms, estimate_load(flat_times(), trace, {}, 1.0, 2).ttft_ms);
  EXPECT_THROW(estimate_load(flat_times(), {}, {}, 0.9, 1), std::invalid_argument);
  EXPECT_THROW(estimate_goodput(flat_times(), trace, {}, {0, 10, 0.9}), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::tuner
