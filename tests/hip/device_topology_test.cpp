// The AMD native kernel's persistent grid per device (src/hip/device_topology):
// shader engines from the XCD count (4 per XCD; 38 CUs per XCD on gfx942, 32
// on gfx950), a CU per shader engine left free, nothing for other targets or
// CU counts that are not whole XCDs.
#include "hip/device_topology.hpp"

#include <gtest/gtest.h>

#include "hip/mfma_layout.hpp"

namespace asynctp::hip {
namespace {

TEST(HipDeviceTopology, KnownDevices) {
  EXPECT_EQ(32, shader_engines("gfx942", 304));  // MI300X: 8 XCDs
  EXPECT_EQ(24, shader_engines("gfx942", 228));  // MI300A: 6 XCDs
  EXPECT_EQ(32, shader_engines("gfx950", 256));  // MI355X: 8 XCDs
  EXPECT_EQ(304 - 32, native_grid("gfx942", 304));
  EXPECT_EQ(228 - 24, native_grid("gfx942", 228));
  EXPECT_EQ(256 - 32, native_grid("gfx950", 256));
}

TEST(HipDeviceTopology, AgreesWithTheUniformRule) {
  // With the same CUs on every shader engine the grid is the reference's
  // occupancy x (CUs per engine - 1) x engines.
  EXPECT_EQ(layout::persistent_grid(kNativeOccupancy, 8, 32), native_grid("gfx950", 256));
}

TEST(HipDeviceTopology, UnknownTargetsAndPartialXcds) {
  for (const char* gfx : {"gfx90a", "gfx940", "gfx1100", ""}) {
    EXPECT_FALSE(shader_engines(gfx, 304)) << gfx;
    EXPECT_FALSE(native_grid(gfx, 304)) << gfx;
  }
  EXPECT_FALSE(shader_engines("gfx942", 300));
  EXPECT_FALSE(shader_engines("gfx950", 0));
  EXPECT_FALSE(native_grid("gfx942", -38));
}

}  // namespace
}  // namespace asynctp::hip
