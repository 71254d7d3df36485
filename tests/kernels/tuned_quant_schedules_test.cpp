// Tuned schedules of quantized weights: a key carries its matrix's block type, the table looks a
// GEMM up by it, and gemm() with no schedule runs the installed table's quantized schedule
// (a batch-invariant call keeps the integer path).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/tuned_schedules.h"
#include "random_quant_blocks.h"
#include "random_values.h"

namespace sandwich::kernels {
namespace {

// Every test leaves the process with no table installed.
class TunedQuantSchedulesTest : public ::testing::Test {
 protected:
  void TearDown() override { install_tuned_schedules(nullptr); }
};

GemmKey quant_key(int64_t n, int64_t k, QType t, int threads = 2) {
  GemmKey key{n, k, DType::BF16, threads, false};
  key.qtype = t;
  return key;
}

// The integer path with other slices than the rule's: one-row tiles, two of them per slice.
Schedule integer_variant(const GemmKey& key) {
  Schedule s = default_schedule(shape_at(key, 1));
  s.um = 1;
  s.bm = 2;
  s.bn = 32;
  s.bk = qtype_info(*key.qtype).block_elems;
  return s;
}

// The BF16-unpacking path, 64 rows widened at a time.
Schedule unpacking(const GemmKey& key) {
  Schedule s = default_schedule(shape_at(key, 1));
  s.unpack_bf16 = true;
  s.bn = 64;
  return s;
}

TEST_F(TunedQuantSchedulesTest, KeysNameTheirBlockType) {
  const GemmKey q4 = quant_key(256, 512, QType::Q4_K);
  EXPECT_EQ(q4.to_string(), "N=256 K=512 q4_k threads=2");
  EXPECT_EQ(weight_type_name(q4), "q4_k");
  EXPECT_NE(q4, (GemmKey{256, 512, DType::BF16, 2, false}));
  for (QType t : {QType::Q4_0, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::Q8_0, QType::Q4_K,
                  QType::Q5_K, QType::Q6_K, QType::Q8_K}) {
    GemmKey k;
    ASSERT_TRUE(set_weight_type(k, weight_type_name(quant_key(32, 256, t))));
    EXPECT_EQ(k.qtype, t);
    EXPECT_EQ(k.weights, DType::BF16);
  }
  GemmKey k = q4;
  ASSERT_TRUE(set_weight_type(k, "Q6_K"));
  EXPECT_EQ(k.qtype, QType::Q6_K);
  ASSERT_TRUE(set_weight_type(k, "f32"));
  EXPECT_EQ(k, (GemmKey{256, 512, DType::F32, 2, false}));
  EXPECT_FALSE(set_weight_type(k, "f16"));  // packed as BF16: no GEMM of its own
  EXPECT_FALSE(set_weight_type(k, "q3_k"));
  // A quantized shape's key is the same whatever float type the shape carries beside it.
  GemmShape s = gemm_shape_of(QuantShape{3, 256, 512, QType::Q4_K, 2});
  EXPECT_EQ(key_of(s), q4);
  s.weights = DType::F32;
  EXPECT_EQ(key_of(s), q4);
  EXPECT_EQ(quant_shape_of(shape_at(q4, 5)).type, QType::Q4_K);
}

TEST_F(TunedQuantSchedulesTest, LookupsGoByTheQuantizedType) {
  // One N x K under three types: each finds its own entry, a fourth type none.
  const GemmKey q4 = quant_key(256, 512, QType::Q4_K), q6 = quant_key(256, 512, QType::Q6_K);
  const GemmKey bf{256, 512, DType::BF16, 2, false};
  auto t = std::make_shared<TunedSchedules>();
  t->add(q4, 1, 8, integer_variant(q4));
  t->add(q6, 1, 8, unpacking(q6));
  t->add(bf, 1, 8, default_schedule(shape_at(bf, 1)));
  EXPECT_EQ(t->keys(), 3u);
  EXPECT_TRUE(t->has_key(q4));
  ASSERT_NE(t->find(shape_at(q4, 4)), nullptr);
  EXPECT_EQ(*t->find(shape_at(q4, 4)), integer_variant(q4));
  EXPECT_EQ(*t->find(shape_at(q6, 8)), unpacking(q6));
  EXPECT_EQ(t->find(shape_at(quant_key(256, 512, QType::Q8_0), 4)), nullptr);
  EXPECT_EQ(t->find(shape_at(q4, 9)), nullptr);
  // The integer kernels are the same in batch-invariant mode: the entry still applies.
  GemmShape bi = shape_at(q4, 4);
  bi.batch_invariant = true;
  EXPECT_NE(t->find(bi), nullptr);

  std::vector<std::string> missed;
  install_tuned_schedules(t, [&](const GemmKey& k) { missed.push_back(k.to_string()); });
  EXPECT_EQ(planned_schedule(QuantShape{4, 256, 512, QType::Q4_K, 2}), integer_variant(q4));
  EXPECT_EQ(planned_schedule(QuantShape{4, 256, 512, QType::Q6_K, 2}), unpacking(q6));
  const QuantShape q8{4, 256, 512, QType::Q8_0, 2};
  EXPECT_EQ(planned_schedule(q8), default_quant_schedule(q8));
  EXPECT_EQ(missed, std::vector<std::string>{"N=256 K=512 q8_0 threads=2"});
}

TEST_F(TunedQuantSchedulesTest, AddValidatesAsTheQuantizedGemmDoes) {
  const GemmKey q4 = quant_key(256, 512, QType::Q4_K);
  TunedSchedules t;
  const auto message = [&](const Schedule& s) -> std::string {
    try {
      t.add(q4, 1, 4, s);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  Schedule s = integer_variant(q4);
  s.bk = 32;  // not a whole Q4_K block
  std::string m = message(s);
  EXPECT_NE(m.find("N=256 K=512 q4_k threads=2 M 1..4"), std::string::npos) << m;
  EXPECT_NE(m.find("block size 256"), std::string::npos) << m;
  s = integer_variant(q4);
  s.um = 99;
  EXPECT_NE(message(s).find("rows"), std::string::npos);
  s = integer_variant(q4);
  s.un = 64;  // a float micro-kernel's width
  EXPECT_NE(message(s).find("16 columns"), std::string::npos);
  EXPECT_EQ(message(integer_variant(q4)), "");
  EXPECT_EQ(t.ranges(), 1u);
}

// gemm() with no schedule runs the installed table's: a BF16-unpacking entry gives the bits of
// that path (another rounding than the integer kernels'), except in a batch-invariant call.
TEST_F(TunedQuantSchedulesTest, GemmRunsTheTablesQuantizedSchedule) {
  const int64_t n = 96, k = 512, m = 33;
  const GemmKey key = quant_key(n, k, QType::Q4_K);
  const auto q =
      test::pack_quant(QType::Q4_K, n, k, test::random_quant_blocks(QType::Q4_K, n, k, 5));
  const auto x = test::random_normal(static_cast<size_t>(m * k), 6);
  ThreadTeam team(2);
  const auto run = [&](const Schedule* s, bool batch_invariant = false) {
    std::vector<float> y(static_cast<size_t>(m * n), -7.0f);
    GemmArgs a{x.data(), k, m, y.data(), n};
    a.batch_invariant = batch_invariant;
    gemm(q.pw, a, team, s);
    return y;
  };
  const Schedule rule = default_quant_schedule(QuantShape{m, n, k, QType::Q4_K, 2});
  const Schedule unpack = unpacking(key);
  const std::vector<float> integer = run(&rule), widened = run(&unpack);
  ASSERT_NE(integer, widened);
  EXPECT_EQ(run(nullptr), integer);  // nothing installed: the rule's

  auto t = std::make_shared<TunedSchedules>();
  t->add(key, 1, 64, unpack);
  install_tuned_schedules(t, [](const GemmKey& k) { FAIL() << "miss " << k.to_string(); });
  EXPECT_EQ(run(nullptr), widened);
  EXPECT_EQ(run(nullptr, true), integer);

  // An integer entry other than the rule's: the integer path's bits do not depend on it.
  t = std::make_shared<TunedSchedules>();
  t->add(key, 1, 64, integer_variant(key));
  install_tuned_schedules(t, [](const GemmKey& k) { FAIL() << "miss " << k.to_string(); });
  EXPECT_EQ(run(nullptr), integer);
}

}  // namespace
}  // namespace sandwich::kernels
