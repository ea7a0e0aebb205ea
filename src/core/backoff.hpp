// How a host thread polls a flag another thread or process will set: spin
// first (the flag is often about to flip), then yield, then sleep with a
// growing pause up to 200 us, the CPU analogue of __nanosleep between polls.
// Bounded by the caller's deadline, which it checks only once spinning is
// over (reading the clock costs more than a poll).
#pragma once

#include <chrono>
#include <thread>

namespace asynctp::core {

class Backoff {
 public:
  // True while still spinning: the caller polls again at once.
  bool spinning() const noexcept { return polls_ < kSpins; }
  // Called after a poll that found nothing (and, once spinning is over,
  // after the caller checked its deadline).
  void pause() {
    ++polls_;
    if (polls_ <= kSpins) return;
    if (polls_ <= 2 * kSpins) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    if (sleep_ < std::chrono::microseconds(200)) sleep_ *= 2;
  }

 private:
  static constexpr int kSpins = 64;
  int polls_ = 0;
  std::chrono::microseconds sleep_{1};
};

}  // namespace asynctp::core
