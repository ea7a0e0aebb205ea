#include "core/bounded_barrier.hpp"

#include <chrono>

#include "asynctp/error.hpp"
#include "core/deadline.hpp"

namespace asynctp::core {

BoundedBarrier::BoundedBarrier(int parties)
    : parties_(parties), arrived_(static_cast<std::size_t>(parties), false) {}

void BoundedBarrier::arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!broken_.empty()) throw Error(ErrorCode::timeout, "group is broken: " + broken_);
  const std::uint64_t generation = generation_;
  arrived_[static_cast<std::size_t>(rank)] = true;
  if (++arrived_count_ == parties_) {
    arrived_count_ = 0;
    arrived_.assign(arrived_.size(), false);
    ++generation_;
    changed_.notify_all();
    return;
  }
  const auto deadline = deadline_after(timeout_ms);
  const bool released = changed_.wait_until(
      lock, deadline, [&] { return generation_ != generation || !broken_.empty(); });
  if (generation_ != generation) return;
  if (!released) {
    std::string missing;
    for (int r = 0; r < parties_; ++r) {
      if (!arrived_[static_cast<std::size_t>(r)]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    broken_ = std::string("rank ") + std::to_string(rank) + " waited " +
              std::to_string(timeout_ms) + " ms at the '" + what +
              "' barrier (ASYNCTP_WAIT_TIMEOUT_MS) for rank(s) " + missing +
              ", which never arrived";
    changed_.notify_all();
    throw Error(ErrorCode::timeout, broken_);
  }
  throw Error(ErrorCode::timeout, "group is broken: " + broken_);
}

std::string BoundedBarrier::broken_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return broken_;
}

}  // namespace asynctp::core
