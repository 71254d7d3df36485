#include <gtest/gtest.h>

#include "common/paths.h"
#include "test_data.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {
namespace {

TEST(TraceSampler, SamplingIsDeterministicAndFitsTheContext) {
  const std::vector<LengthPair> table{{10, 20}, {3000, 900}, {0, 5}, {100, 0}};
  const RequestTrace a = sample_trace(table, 200, 7, 2048, "t.csv");
  const RequestTrace b = sample_trace(table, 200, 7, 2048, "t.csv");
  ASSERT_EQ(a.requests.size(), 200u);
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].input, b.requests[i].input);
    EXPECT_GE(a.requests[i].input, 1);
    EXPECT_GE(a.requests[i].output, 1);
    EXPECT_LE(a.requests[i].input + a.requests[i].output, 2048);
  }
  EXPECT_EQ(a.source, "200 requests sampled from t.csv (seed 7)");
}

TEST(TraceSampler, MeanDecodeContextWeighsByOutputLength) {
  RequestTrace t;
  t.requests = {{100, 1}, {10, 3}};  // contexts 100 | 10, 11, 12
  EXPECT_DOUBLE_EQ(t.mean_decode_context(), (100.0 + 10 + 11 + 12) / 4);
  EXPECT_DOUBLE_EQ(t.mean_input(), 55);
}

TEST(TraceSampler, TheShareGptTable) {
  SANDWICH_REQUIRE_DATA();
  const auto table = read_length_trace(default_length_trace());
  EXPECT_EQ(table.size(), 84226u);
  const RequestTrace t = sample_trace(table, 64, 0, 8192, "sharegpt_lengths.csv");
  EXPECT_GT(t.mean_input(), 10);
  EXPECT_GT(t.mean_output(), 10);
}

}  // namespace
}  // namespace sandwich::tuner
