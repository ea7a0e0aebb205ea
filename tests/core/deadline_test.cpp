// Deadlines of bounded waits: a timeout is a user setting up to int64 ms, so
// the deadline must saturate instead of overflowing into the past.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "core/deadline.hpp"

namespace asynctp::core {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Deadline, OrdinaryTimeoutsAreNowPlusTheTimeout) {
  for (std::int64_t ms : {0, 1, 250, 60'000, 86'400'000}) {
    const auto before = Clock::now();
    const auto deadline = deadline_after(ms);
    const auto after = Clock::now();
    EXPECT_GE(deadline, before + std::chrono::milliseconds(ms)) << ms;
    EXPECT_LE(deadline, after + std::chrono::milliseconds(ms)) << ms;
  }
}

TEST(Deadline, HugeTimeoutsSaturateInTheFuture) {
  const auto now = Clock::now();
  for (std::int64_t ms : {std::int64_t{9'223'372'036'854}, std::int64_t{1} << 50,
                          std::numeric_limits<std::int64_t>::max()}) {
    const auto deadline = deadline_after(ms);
    EXPECT_GT(deadline, now + std::chrono::hours(24 * 365)) << ms;
  }
  EXPECT_EQ(deadline_after(std::numeric_limits<std::int64_t>::max()), Clock::time_point::max());
}

}  // namespace
}  // namespace asynctp::core
