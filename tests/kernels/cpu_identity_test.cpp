// This CPU's identity as a tuned table records it: read once, a model name always.
#include "kernels/cpu_identity.h"

#include <gtest/gtest.h>

namespace sandwich::kernels {
namespace {

TEST(CpuIdentity, NamesTheModelAndCachesOnce) {
  const CpuIdentity& id = cpu_identity();
  EXPECT_FALSE(id.model.empty());
  EXPECT_EQ(&cpu_identity(), &id);
  EXPECT_GE(id.l1d_bytes, 0);
  if (id.l1d_bytes > 0 && id.l2_bytes > 0) {
    EXPECT_GE(id.l2_bytes, id.l1d_bytes);
  }
}

}  // namespace
}  // namespace sandwich::kernels
