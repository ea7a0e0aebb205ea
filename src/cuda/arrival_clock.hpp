// The host clock of the arrival link model (asynctp/cuda.hpp, Link::arrival).
// A rank's producer stream writes the call's epoch into the start word when
// the modelled transfer begins; this clock's thread notices, and from then on
// sets each signal piece's release word to that epoch at the piece's modelled
// arrival time. The stream waits for each release word before it writes the
// piece's signal, so no piece is released early.
//
// The clock never waits on the device beyond noticing a start: once started,
// every release word of the schedule is set on time, so a stream waiting on
// one is always freed (bounded). It runs for every start, including starts
// written by CUDA graph replays the host knows nothing about; it watches
// closely for a while after arm() and lazily (tens of microseconds late at
// worst) otherwise. It writes only host memory and calls no CUDA function, so
// it can never sit in a hardware queue behind a running persistent kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/resources.hpp"

namespace asynctp::cuda {

class ArrivalClock {
 public:
  explicit ArrivalClock(int pieces);
  ~ArrivalClock();
  ArrivalClock(const ArrivalClock&) = delete;
  ArrivalClock& operator=(const ArrivalClock&) = delete;

  std::uint32_t* start_word() const noexcept { return words_.device(); }
  std::uint32_t* release_word(int piece) const noexcept { return words_.device() + 1 + piece; }

  // The schedule of every later start: pieces[i] is released
  // (i + 1) * seconds_per_piece after the start. Also watches closely for
  // the next start (a call about to be enqueued).
  void arm(const std::vector<int>& pieces, double seconds_per_piece);

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  void run_schedule(std::uint32_t epoch);

  MappedWords words_;  // [0] start, [1 + p] release word of piece p
  std::mutex mutex_;
  std::vector<int> pieces_;
  double seconds_per_piece_ = 0;
  std::atomic<std::int64_t> watch_closely_until_ns_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace asynctp::cuda
