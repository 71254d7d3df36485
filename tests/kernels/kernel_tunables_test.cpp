#include "kernels/kernel_tunables.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

namespace sandwich::kernels {
namespace {

class KernelTunables : public ::testing::Test {
 protected:
  void SetUp() override { clear_kernel_params(); }
  void TearDown() override { clear_kernel_params(); }
};

TEST_F(KernelTunables, LooksUpByKernelKeyAndM) {
  const std::map<std::string, int64_t> key{{"head_dim", 64}, {"threads", 2}};
  install_kernel_params("attention_decode", key, 9, 64, {{"kv_blocks", 8}});
  install_kernel_params("attention_decode", key, 1, 8, {{"kv_blocks", 4}});
  ASSERT_NE(kernel_params("attention_decode", key, 1), nullptr);
  EXPECT_EQ(kernel_params("attention_decode", key, 1)->at("kv_blocks"), 4);
  EXPECT_EQ(kernel_params("attention_decode", key, 8)->at("kv_blocks"), 4);
  EXPECT_EQ(kernel_params("attention_decode", key, 9)->at("kv_blocks"), 8);
  EXPECT_EQ(kernel_params("attention_decode", key, 64)->at("kv_blocks"), 8);
  EXPECT_EQ(kernel_params("attention_decode", key, 65), nullptr);
  EXPECT_EQ(kernel_params("attention_prefill", key, 1), nullptr);
  EXPECT_EQ(kernel_params("attention_decode", {{"head_dim", 64}}, 1), nullptr);
}

TEST_F(KernelTunables, PointersOutliveLaterInstalls) {
  install_kernel_params("k", {}, 1, 4, {{"p", 1}});
  const auto* p = kernel_params("k", {}, 2);
  ASSERT_NE(p, nullptr);
  install_kernel_params("k", {}, 5, 8, {{"p", 2}});
  EXPECT_EQ(p->at("p"), 1);
  clear_kernel_params();
  EXPECT_EQ(kernel_params("k", {}, 2), nullptr);
  EXPECT_EQ(p->at("p"), 1);
}

TEST_F(KernelTunables, RejectsBadAndOverlappingRanges) {
  install_kernel_params("k", {{"d", 1}}, 4, 8, {});
  EXPECT_THROW(install_kernel_params("k", {{"d", 1}}, 0, 2, {}), std::invalid_argument);
  EXPECT_THROW(install_kernel_params("k", {{"d", 1}}, 3, 2, {}), std::invalid_argument);
  try {
    install_kernel_params("k", {{"d", 1}}, 8, 9, {});
    FAIL() << "overlap accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("k d=1 M 8..9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overlaps M 4..8"), std::string::npos) << e.what();
  }
  // Another key is independent.
  EXPECT_NO_THROW(install_kernel_params("k", {{"d", 2}}, 4, 8, {}));
}

// A table built whole refuses by the same rule, installs nothing until asked, then replaces
// everything installed before.
TEST_F(KernelTunables, ATableIsBuiltWholeThenInstalled) {
  install_kernel_params("old", {}, 1, 4, {{"p", 1}});
  KernelParamTable t;
  EXPECT_EQ(t.add("k", {{"d", 1}}, 4, 8, {{"p", 2}}), "");
  EXPECT_EQ(t.add("k", {{"d", 1}}, 8, 9, {}), "overlaps M 4..8");
  EXPECT_EQ(t.add("k", {{"d", 1}}, 0, 2, {}), "not a range of M >= 1");
  EXPECT_EQ(t.add("k", {{"d", 2}}, 4, 8, {{"p", 3}}), "");
  ASSERT_NE(t.find("k", {{"d", 1}}, 8), nullptr);
  EXPECT_EQ(t.find("k", {{"d", 1}}, 9), nullptr);
  EXPECT_EQ(kernel_params("k", {{"d", 1}}, 4), nullptr);
  install_kernel_params(std::move(t));
  EXPECT_EQ(kernel_params("old", {}, 1), nullptr);
  ASSERT_NE(kernel_params("k", {{"d", 2}}, 4), nullptr);
  EXPECT_EQ(kernel_params("k", {{"d", 2}}, 4)->at("p"), 3);
  EXPECT_EQ(kernel_params_text("k", {{"d", 1}, {"a", 2}}, 1, 16),
            "kernel parameters for k a=2 d=1 M 1..16");
}

}  // namespace
}  // namespace sandwich::kernels
