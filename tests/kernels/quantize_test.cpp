// quantize_ref: dequantize(quantize(x)) stays within the error each format's level spacing
// implies, on random and edge inputs, for every block type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/quantize.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

constexpr QType kAll[] = {QType::Q4_0, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::Q8_0,
                          QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::Q8_K};

std::vector<float> round_trip(QType t, const std::vector<float>& x) {
  std::vector<uint8_t> blocks(static_cast<size_t>(quantized_bytes(t, std::ssize(x))));
  quantize_ref(t, x.data(), blocks.data(), std::ssize(x));
  std::vector<float> y(x.size());
  dequantize_ref(t, blocks.data(), y.data(), std::ssize(x));
  return y;
}

double rms(const std::vector<float>& a) {
  double s = 0;
  for (float v : a) s += static_cast<double>(v) * v;
  return std::sqrt(s / static_cast<double>(a.size()));
}

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (static_cast<double>(x[i]) - y[i]) * (x[i] - y[i]);
  return std::sqrt(s / static_cast<double>(x.size()));
}

// RMS error relative to the RMS of N(0, 1) weights: a uniform rounding error of a quarter of a
// level spacing more than step / sqrt(12), where step spans about 6 sigma over 2^bits levels
// (the K types' narrower sub-blocks and 6-bit scales land inside the same bound).
double bound(QType t) {
  switch (t) {
    case QType::Q4_0:
    case QType::Q4_1:
    case QType::Q4_K:
      return 6.0 / 15 / std::sqrt(12.0) * 1.25;
    case QType::Q5_0:
    case QType::Q5_1:
    case QType::Q5_K:
      return 6.0 / 31 / std::sqrt(12.0) * 1.25;
    case QType::Q6_K:
      return 6.0 / 63 / std::sqrt(12.0) * 1.25;
    case QType::Q8_0:
    case QType::Q8_K:
      return 6.0 / 255 / std::sqrt(12.0) * 1.25;
  }
  return 0;
}

int64_t block(QType t) {
  return qtype_info(t).block_elems;
}

TEST(Quantize, RandomWeightsWithinTheFormatsErrorBound) {
  for (QType t : kAll) {
    SCOPED_TRACE(std::string(qtype_info(t).name));
    const auto x = test::random_normal(static_cast<size_t>(block(t) * 16), 7);
    const auto y = round_trip(t, x);
    EXPECT_LT(rms_error(x, y) / rms(x), bound(t));
    EXPECT_GT(rms_error(x, y), 0.0);  // the test would not notice a lossless no-op otherwise
  }
}

TEST(Quantize, ScaleFollowsTheMagnitudeOfTheWeights) {
  // Huge and tiny rows (within what an f16 scale can hold) keep their relative error.
  for (QType t : kAll) {
    for (float scale : {1e3f, 1e-2f}) {
      SCOPED_TRACE(std::string(qtype_info(t).name) + " x" + std::to_string(scale));
      const auto x = test::random_normal(static_cast<size_t>(block(t) * 4), 11, scale);
      const auto y = round_trip(t, x);
      EXPECT_LT(rms_error(x, y) / rms(x), bound(t) * 1.1);
    }
  }
}

TEST(Quantize, ZerosStayZero) {
  for (QType t : kAll) {
    SCOPED_TRACE(std::string(qtype_info(t).name));
    const std::vector<float> x(static_cast<size_t>(block(t) * 2), 0.0f);
    for (float v : round_trip(t, x)) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Quantize, ConstantRowsAreNearlyExact) {
  for (QType t : kAll) {
    for (float c : {0.75f, -3.5f}) {
      SCOPED_TRACE(std::string(qtype_info(t).name) + " " + std::to_string(c));
      const std::vector<float> x(static_cast<size_t>(block(t)), c);
      const auto y = round_trip(t, x);
      // Only the f16 rounding of the scale (and of the 6-bit sub-scales of the K types).
      EXPECT_LT(rms_error(x, y), std::fabs(c) * 2e-2);
    }
  }
}

TEST(Quantize, OneOutlierPerBlockIsKept) {
  for (QType t : kAll) {
    SCOPED_TRACE(std::string(qtype_info(t).name));
    auto x = test::random_normal(static_cast<size_t>(block(t)), 3, 0.01f);
    x[5] = 4.0f;
    const auto y = round_trip(t, x);
    EXPECT_NEAR(y[5], 4.0f, 4.0f * 0.02f);
  }
}

TEST(Quantize, BlocksAreIndependent) {
  // The second block's scale does not leak into the first: quantizing them apart gives the same.
  for (QType t : kAll) {
    SCOPED_TRACE(std::string(qtype_info(t).name));
    auto x = test::random_normal(static_cast<size_t>(block(t) * 2), 5);
    for (int64_t i = block(t); i < block(t) * 2; ++i) x[static_cast<size_t>(i)] *= 100;
    const auto both = round_trip(t, x);
    const std::vector<float> first(x.begin(), x.begin() + block(t));
    const auto alone = round_trip(t, first);
    for (int64_t i = 0; i < block(t); ++i)
      EXPECT_EQ(both[static_cast<size_t>(i)], alone[static_cast<size_t>(i)]);
  }
}

TEST(Quantize, KTypesSearchBeatsPlainMinMax) {
  // Q4_1/Q5_1 are plain min/max rounding over 32 weights with f16 scale and min; the K types'
  // search over the same sub-block must do at least as well despite their 6-bit sub-scales.
  const auto x = test::random_normal(kQKK * 32, 13);
  EXPECT_LE(rms_error(x, round_trip(QType::Q4_K, x)), rms_error(x, round_trip(QType::Q4_1, x)));
  EXPECT_LE(rms_error(x, round_trip(QType::Q5_K, x)), rms_error(x, round_trip(QType::Q5_1, x)));
}

TEST(Quantize, Q8KBlockSumsMatchItsValues) {
  const auto x = test::random_normal(kQKK, 17);
  BlockQ8_K b;
  quantize_ref(QType::Q8_K, x.data(), &b, kQKK);
  for (int g = 0; g < kQKK / 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) {
      sum += b.qs[16 * g + l];
      EXPECT_LE(std::abs(b.qs[16 * g + l]), 127);
    }
    EXPECT_EQ(b.bsums[g], sum);
  }
}

TEST(Quantize, RefusesAPartialBlock) {
  std::vector<float> x(kQK + 1, 1.0f);
  std::vector<uint8_t> out(64);
  EXPECT_THROW(quantize_ref(QType::Q8_0, x.data(), out.data(), std::ssize(x)),
               std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::kernels
