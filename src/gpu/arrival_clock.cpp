#include "gpu/arrival_clock.hpp"

#include <atomic>

namespace asynctp::gpu {
namespace {

// How long after arm() the clock polls without sleeping.
constexpr std::chrono::seconds kCloseWatch{2};
// Poll interval otherwise (graph replays start without a host call).
constexpr std::chrono::microseconds kLazyPoll{20};

std::uint32_t load(std::uint32_t* word) {
  return std::atomic_ref<std::uint32_t>(*word).load(std::memory_order_acquire);
}

void store(std::uint32_t* word, std::uint32_t value) {
  std::atomic_ref<std::uint32_t>(*word).store(value, std::memory_order_release);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ArrivalClock::ArrivalClock(int pieces)
    : words_(static_cast<std::size_t>(pieces) + 1, "arrival clock words (mapped host memory)"),
      thread_([this] { loop(); }) {}

ArrivalClock::~ArrivalClock() {
  stop_ = true;
  thread_.join();
}

void ArrivalClock::schedule(std::uint32_t epoch, const std::vector<int>& pieces,
                            double seconds_per_piece, bool keep) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Schedule entry{epoch, pieces, seconds_per_piece};
    if (keep) {
      kept_.push_back(std::move(entry));
    } else {
      recent_.push_back(std::move(entry));
      if (recent_.size() > kRecentSchedules) recent_.pop_front();
    }
  }
  const auto until = now_ns() + std::chrono::nanoseconds(kCloseWatch).count();
  watch_closely_until_ns_.store(until, std::memory_order_relaxed);
}

ArrivalClock::Schedule ArrivalClock::find_schedule(std::uint32_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
    if (it->epoch == epoch) return *it;
  }
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
    if (it->epoch == epoch) return *it;
  }
  // Unknown epoch: release everything now, so nothing waits forever.
  Schedule all{epoch, {}, 0};
  for (std::size_t p = 0; p + 1 < words_.size(); ++p) all.pieces.push_back(static_cast<int>(p));
  return all;
}

void ArrivalClock::loop() {
  std::uint32_t* start = words_.host();
  while (!stop_.load(std::memory_order_relaxed)) {
    const std::uint32_t epoch = load(start);
    if (epoch != 0) {
      store(start, 0);  // consumed: the next call or replay writes it again
      run_schedule(find_schedule(epoch));
      continue;
    }
    if (now_ns() < watch_closely_until_ns_.load(std::memory_order_relaxed)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kLazyPoll);
    }
  }
}

void ArrivalClock::run_schedule(const Schedule& schedule) {
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < schedule.pieces.size(); ++i) {
    const auto due = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                              schedule.seconds_per_piece * static_cast<double>(i + 1)));
    // Sleep while far from the deadline, then spin: releases are a few
    // microseconds apart at NVLink-class speeds. Stopping the clock still
    // releases every word, so no stream is left waiting.
    while (!stop_.load(std::memory_order_relaxed)) {
      const auto left = due - Clock::now();
      if (left <= Clock::duration::zero()) break;
      if (left > std::chrono::microseconds(300)) {
        std::this_thread::sleep_for(left - std::chrono::microseconds(200));
      } else {
        std::this_thread::yield();
      }
    }
    store(words_.host() + 1 + schedule.pieces[i], schedule.epoch);
  }
}

}  // namespace asynctp::gpu
