// When the AMD native kernel may run (src/hip/native_rules): only on gfx942
// and gfx950 whatever feature suffixes the device name carries, m per rank a
// multiple of 256, every tensor within 32-bit indexing; each refusal says why.
#include "hip/native_rules.hpp"

#include <gtest/gtest.h>

#include <string>

namespace asynctp::hip {
namespace {

bool mentions(const std::optional<std::string>& why, const std::string& part) {
  return why && why->find(part) != std::string::npos;
}

TEST(HipNativeRules, OnlyGfx942AndGfx950) {
  EXPECT_EQ("gfx942", gfx_target("gfx942:sramecc+:xnack-"));
  EXPECT_EQ("gfx90a", gfx_target("gfx90a"));
  EXPECT_FALSE(native_blocker("gfx942:sramecc+:xnack-", 8, 1024, 8192, 8192));
  EXPECT_FALSE(native_blocker("gfx950", 8, 1024, 8192, 8192));
  for (const char* other : {"gfx90a:sramecc+:xnack-", "gfx940", "gfx1100", ""}) {
    const auto why = native_blocker(other, 8, 1024, 8192, 8192);
    EXPECT_TRUE(mentions(why, "gfx942 and gfx950 only")) << other;
  }
}

TEST(HipNativeRules, TileAndIndexLimits) {
  EXPECT_TRUE(
      mentions(native_blocker("gfx942", 8, 1000, 8192, 8192), "multiple of the tile M (256)"));
  // 8 x 65536 rows x 8192 columns = 2^32 elements in the gathered A.
  EXPECT_TRUE(mentions(native_blocker("gfx942", 8, 65536, 1024, 8192), "2^31"));
  // B alone too big: 65536 x 65536.
  EXPECT_TRUE(mentions(native_blocker("gfx942", 1, 256, 65536, 65536), "2^31"));
  EXPECT_FALSE(native_blocker("gfx942", 8, 2048, 8192, 8192));
}

}  // namespace
}  // namespace asynctp::hip
