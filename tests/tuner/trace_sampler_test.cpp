#include <gtest/gtest.h>

#include <fstream>

#include "test_data.h"
#include "tuner/trace_sampler.h"

namespace sandwich::tuner {
namespace {

TEST(TraceSampler, ReadsTheTableWithOrWithoutHeader) {
  sandwich::test::TempDir dir;
  std::ofstream(dir / "a.csv") << "input_tokens,output_tokens\n10,20\r\n30,40\n\n";
  std::ofstream(dir / "b.csv") << "5,6\n";
  const auto a = read_length_table(dir / "a.csv");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].input, 30);
  EXPECT_EQ(a[1].output, 40);
  EXPECT_EQ(read_length_table(dir / "b.csv").size(), 1u);
}

TEST(TraceSampler, BadLinesAndMissingFilesAreClearErrors) {
  sandwich::test::TempDir dir;
  std::ofstream(dir / "bad.csv") << "input,output\n1,2\nthree,4\n";
  try {
    read_length_table(dir / "bad.csv");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_length_table(dir / "none.csv"), std::invalid_argument);
}

TEST(TraceSampler, SamplingIsDeterministicAndFitsTheContext) {
  const std::vector<RequestLengths> table{{10, 20}, {3000, 900}, {0, 5}, {100, 0}};
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
  const auto table = read_length_table(default_trace_table());
  EXPECT_EQ(table.size(), 84226u);
  const RequestTrace t = sample_trace(table, 64, 0, 8192, "sharegpt_lengths.csv");
  EXPECT_GT(t.mean_input(), 10);
  EXPECT_GT(t.mean_output(), 10);
}

}  // namespace
}  // namespace sandwich::tuner
