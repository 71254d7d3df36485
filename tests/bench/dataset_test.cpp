// Request lengths (ShareGPT trace, LMSYS model, fixed, CSV) and the arrival process.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

#include "bench/arrivals.h"
#include "bench/dataset.h"
#include "test_data.h"

namespace sandwich::bench {
namespace {

std::string sharegpt() {
  return (test::data_dir() / "traces" / "sharegpt_lengths.csv").string();
}

TEST(BenchDataset, ShareGptSampleIsFilteredSeededAndFromTheTrace) {
  SANDWICH_REQUIRE_DATA();
  const auto rows = read_length_trace(sharegpt());
  EXPECT_EQ(rows.size(), 84226u);
  std::set<std::pair<int, int>> trace;
  for (const auto& r : rows) trace.insert({r.input, r.output});

  const auto a = sample_lengths(DatasetSpec{}, 500, 0, 2048, sharegpt());
  ASSERT_EQ(a.size(), 500u);
  for (const auto& p : a) {
    EXPECT_GE(p.input, 4);
    EXPECT_GE(p.output, 4);
    EXPECT_LE(p.input + p.output, 2048);
    EXPECT_TRUE(trace.count({p.input, p.output}));
  }
  EXPECT_EQ(sample_lengths(DatasetSpec{}, 500, 0, 2048, sharegpt()), a);
  EXPECT_NE(sample_lengths(DatasetSpec{}, 500, 1, 2048, sharegpt()), a);
  for (const auto& p : sample_lengths(DatasetSpec{}, 300, 0, 256, sharegpt()))
    EXPECT_LE(p.input + p.output, 256);
  // Pairs too long for the context are skipped: the first 500 of a 512-context sample differ.
  EXPECT_NE(sample_lengths(DatasetSpec{}, 500, 0, 512, sharegpt()), a);
  EXPECT_THROW(sample_lengths(DatasetSpec{}, 10, 0, 7, sharegpt()),
               std::invalid_argument);  // 4 + 4 > 7
}

TEST(BenchDataset, AMissingTraceIsNamed) {
  try {
    sample_lengths(DatasetSpec{}, 1, 0, 2048, "/no/such/lengths.csv");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/lengths.csv"), std::string::npos);
  }
}

TEST(BenchDataset, LmsysModelHasThePublishedMeans) {
  const auto v = sample_lengths(parse_dataset_spec("lmsys"), 40000, 3, 1 << 20);
  double in = 0, out = 0;
  for (const auto& p : v) {
    ASSERT_GE(p.input, 1);
    ASSERT_GE(p.output, 1);
    in += p.input;
    out += p.output;
  }
  EXPECT_NEAR(in / v.size(), kLmsysMeanPrompt, 0.02 * kLmsysMeanPrompt);
  EXPECT_NEAR(out / v.size(), kLmsysMeanResponse, 0.02 * kLmsysMeanResponse);
  EXPECT_EQ(sample_lengths(parse_dataset_spec("lmsys"), 100, 3, 1 << 20),
            std::vector<LengthPair>(v.begin(), v.begin() + 100));
  for (const auto& p : sample_lengths(parse_dataset_spec("lmsys"), 2000, 3, 300))
    EXPECT_LE(p.input + p.output, 300);
}

TEST(BenchDataset, FixedAndCsvSpecs) {
  const auto f = sample_lengths(parse_dataset_spec("fixed:128,64"), 5, 0, 2048);
  EXPECT_EQ(f, std::vector<LengthPair>(5, LengthPair{128, 64}));
  EXPECT_THROW(sample_lengths(parse_dataset_spec("fixed:2000,100"), 5, 0, 2048),
               std::invalid_argument);

  test::TempDir dir;
  const std::string path = (dir / "lens.csv").string();
  std::ofstream(path) << "output_tokens,input_tokens\n10,100\n20, 200\n\n30,300\n";
  const auto c = sample_lengths(parse_dataset_spec("csv:" + path), 7, 0, 2048);
  const std::vector<LengthPair> want = {{100, 10}, {200, 20}, {300, 30}, {100, 10},
                                        {200, 20}, {300, 30}, {100, 10}};
  EXPECT_EQ(c, want);
  EXPECT_THROW(sample_lengths(parse_dataset_spec("csv:" + path), 1, 0, 300), std::invalid_argument);
}

TEST(BenchDataset, BadSpecsSayWhatIsAccepted) {
  for (const char* bad :
       {"", "sharegpt2", "fixed:", "fixed:10", "fixed:0,5", "fixed:a,b", "fixed:5,-1", "csv:"}) {
    try {
      parse_dataset_spec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  EXPECT_EQ(parse_dataset_spec("fixed:3,4").fixed_output, 4);
}

TEST(BenchArrivals, InfiniteRateReleasesEverythingAtOnce) {
  EXPECT_EQ(arrival_times(4, std::numeric_limits<double>::infinity(), 1, 0),
            std::vector<double>(4, 0.0));
  EXPECT_TRUE(arrival_times(0, 1, 1, 0).empty());
}

TEST(BenchArrivals, SeededNonDecreasingFromZero) {
  const auto a = arrival_times(100, 5, 1, 42);
  EXPECT_EQ(a.front(), 0.0);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i], a[i - 1]);
  EXPECT_EQ(arrival_times(100, 5, 1, 42), a);
  EXPECT_NE(arrival_times(100, 5, 1, 43), a);
  EXPECT_THROW(arrival_times(3, 0, 1, 0), std::invalid_argument);
  EXPECT_THROW(arrival_times(3, 1, 0, 0), std::invalid_argument);
  EXPECT_THROW(arrival_times(3, -1, 1, 0), std::invalid_argument);
}

// Gamma(k, 1 / (rate k)) gaps: mean 1 / rate, squared coefficient of variation 1 / k.
TEST(BenchArrivals, GammaGapsHaveTheRateAndBurstiness) {
  const int n = 40001;
  for (double burstiness : {1.0, 0.25, 4.0}) {
    const auto a = arrival_times(n, 2.0, burstiness, 7);
    std::vector<double> gaps;
    for (size_t i = 1; i < a.size(); ++i) gaps.push_back(a[i] - a[i - 1]);
    const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
    double var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    var /= gaps.size() - 1;
    EXPECT_NEAR(mean, 0.5, 0.5 * 0.04) << burstiness;
    EXPECT_NEAR(var / (mean * mean), 1 / burstiness, 0.1 / burstiness) << burstiness;
  }
}

}  // namespace
}  // namespace sandwich::bench
