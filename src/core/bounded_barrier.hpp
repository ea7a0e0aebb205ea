// A barrier among the ranks of an in-process group (CPU threads, or the host
// threads of GPU virtual ranks) whose wait is bounded. A rank that
// times out names the ranks that never arrived and breaks the barrier, so the
// ranks still waiting fail at once instead of waiting out their own timeouts;
// a broken group fails every later call with the original reason (as an NCCL
// communicator in an error state does).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace asynctp::core {

// What the agreement step needs of a barrier, whether its ranks are threads
// of one process (BoundedBarrier) or processes (cpu/shm_barrier.hpp).
class Barrier {
 public:
  virtual ~Barrier() = default;
  // Returns once every rank arrived. Throws Error(timeout) after timeout_ms,
  // naming the ranks that never arrived, or at once if the barrier is broken.
  virtual void arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) = 0;
};

class BoundedBarrier final : public Barrier {
 public:
  explicit BoundedBarrier(int parties);

  void arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) override;
  // Empty while healthy; otherwise why the barrier broke.
  std::string broken_reason() const;

 private:
  const int parties_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
  int arrived_count_ = 0;
  std::vector<bool> arrived_;
  std::string broken_;
};

}  // namespace asynctp::core
