// Deadlines for bounded waits. A timeout is a user setting (up to int64 ms);
// adding a huge one to now() would overflow into the past and expire at once,
// so the deadline saturates at the clock's maximum instead.
#pragma once

#include <chrono>
#include <cstdint>

namespace asynctp::core {

inline std::chrono::steady_clock::time_point deadline_after(std::int64_t timeout_ms) noexcept {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  if (timeout_ms >= room.count()) return Clock::time_point::max();
  return now + std::chrono::milliseconds(timeout_ms);
}

}  // namespace asynctp::core
