// bench::ClockProbe on the GPU: a reading per recorded slot, in MHz within
// the device's peak clock, steady from one probe to the next, zero where
// nothing was recorded, cleared by reading; bad slots are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "gpu/gpu_support.hpp"

namespace asynctp_test::gpu {
namespace {

TEST(ClockProbe, ReadsTheSmClockInMhzWhereRecordedAndClearsOnRead) {
  ASYNCTP_REQUIRE_SM90();
  int peak_khz = 0;
  CUDA_ASSERT(cudaDeviceGetAttribute(&peak_khz, cudaDevAttrClockRate, 0));
  ASSERT_GT(peak_khz, 0);
  asynctp::bench::Stream stream;
  asynctp::bench::ClockProbe probe(4);
  // Slot 2 stays unrecorded; 1 and 3 follow 0 back to back, on a GPU the
  // first probes have woken, so their clocks agree closely.
  probe.record(stream.get(), 0);
  probe.record(stream.get(), 1);
  probe.record(stream.get(), 3);
  stream.synchronize();
  const std::vector<double> mhz = probe.read();
  ASSERT_EQ(mhz.size(), 4u);
  EXPECT_EQ(mhz[2], 0.0);
  for (int slot : {0, 1, 3}) {
    SCOPED_TRACE(slot);
    EXPECT_GT(mhz[slot], 50.0);
    EXPECT_LE(mhz[slot], 1.02 * peak_khz / 1e3) << "peak " << peak_khz / 1e3 << " MHz";
  }
  EXPECT_NEAR(mhz[3], mhz[1], 0.05 * mhz[1]);
  for (double cleared : probe.read()) EXPECT_EQ(cleared, 0.0);
}

TEST(ClockProbe, RefusesASlotOutsideItsRoomAndAnEmptyProbe) {
  ASYNCTP_REQUIRE_SM90();
  asynctp::bench::Stream stream;
  asynctp::bench::ClockProbe probe(2);
  for (int slot : {-1, 2}) {
    try {
      probe.record(stream.get(), slot);
      ADD_FAILURE() << "slot " << slot << " was accepted";
    } catch (const asynctp::Error& e) {
      EXPECT_EQ(e.code(), asynctp::ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("slot: must lie in [0, 2), got " + std::to_string(slot)),
                std::string::npos)
          << e.what();
    }
  }
  for (double untouched : probe.read()) EXPECT_EQ(untouched, 0.0);
  try {
    asynctp::bench::ClockProbe none(0);
    ADD_FAILURE() << "a probe of 0 slots was made";
  } catch (const asynctp::Error& e) {
    EXPECT_EQ(e.code(), asynctp::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("slots: a ClockProbe needs at least 1, got 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace asynctp_test::gpu
