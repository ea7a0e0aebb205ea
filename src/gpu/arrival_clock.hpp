// The host clock of the arrival link model (asynctp/cuda.hpp, Link::arrival).
// A rank's stream writes the call's epoch into the start word when the
// modelled transfer begins; this clock's thread notices, and from then on
// sets each signal piece's release word to that epoch at the piece's modelled
// arrival time, following the schedule registered for that epoch.
//
// A stream waits for each release word (a stream memory operation), then writes the
// piece's device flag. (The native kernel could poll the host words itself,
// but measured: a system-scope acquire of host memory made the kernel 2.8x
// slower even with every word already set; bench/NOTES.md, v4.)
//
// The clock never waits on the device beyond noticing a start, writes only
// host memory and calls no runtime function, so it can never sit in a hardware
// queue behind a running persistent kernel (bench/NOTES.md, v3: a clock that
// wrote device flags through its own stream deadlocked). A start whose epoch
// has no schedule (evicted) releases every word at once: early rather than never.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "gpu/resources.hpp"

namespace asynctp::gpu {

class ArrivalClock {
 public:
  explicit ArrivalClock(int pieces);
  ~ArrivalClock();
  ArrivalClock(const ArrivalClock&) = delete;
  ArrivalClock& operator=(const ArrivalClock&) = delete;

  // Device addresses (host memory mapped into the device).
  std::uint32_t* start_word() const noexcept { return words_.device(); }
  std::uint32_t* release_word(int piece) const noexcept { return words_.device() + 1 + piece; }

  // Registers what a start carrying `epoch` releases: pieces[i] at
  // (i + 1) * seconds_per_piece after the start. Schedules of eager calls are
  // forgotten after kRecentSchedules newer ones; a captured call's schedule
  // (keep = true) lives as long as the clock, since its graph may replay at
  // any time. Also watches closely for the next start (a call being enqueued).
  void schedule(std::uint32_t epoch, const std::vector<int>& pieces, double seconds_per_piece,
                bool keep);

  static constexpr std::size_t kRecentSchedules = 16;

 private:
  using Clock = std::chrono::steady_clock;
  struct Schedule {
    std::uint32_t epoch = 0;
    std::vector<int> pieces;
    double seconds_per_piece = 0;
  };
  void loop();
  Schedule find_schedule(std::uint32_t epoch);
  void run_schedule(const Schedule& schedule);

  MappedWords words_;  // [0] start, [1 + p] release word of piece p
  std::mutex mutex_;
  std::deque<Schedule> recent_;  // newest last
  std::vector<Schedule> kept_;
  std::atomic<std::int64_t> watch_closely_until_ns_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace asynctp::gpu
