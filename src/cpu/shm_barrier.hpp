// The barrier of a group of processes, in its control segment: each rank
// counts the barriers it has entered in its own word and waits until every
// rank's count reaches its own. The wait is bounded, and while it runs long
// it looks after the ranks that have not arrived: a process that is gone
// (exited or killed) breaks the group at once with an error naming its rank
// and pid, instead of a wait for the timeout. A broken group (shm::Header's
// `broken`) fails every later barrier of every rank with the first reason,
// as core::BoundedBarrier does within one process.
#pragma once

#include <cstdint>
#include <string>

#include "core/bounded_barrier.hpp"
#include "cpu/shm_control.hpp"

namespace asynctp::cpu {

// Whether process `pid` of this host still runs (a zombie does not).
bool process_alive(std::int32_t pid) noexcept;

class ShmBarrier final : public core::Barrier {
 public:
  ShmBarrier(shm::Control control, int world) noexcept : control_(control), world_(world) {}

  // Whether the peers' pids mean something here: false where this process
  // cannot see them (another pid namespace sharing /dev/shm), and waits
  // then end by their timeout only.
  void watch_peers(bool watch) noexcept { watch_peers_ = watch; }

  void arrive_and_wait(int rank, const char* what, std::int64_t timeout_ms) override;

  // Breaks the group for every rank with `reason` (the first reason wins)
  // and returns the reason that stands.
  std::string break_group(shm::Broken kind, const std::string& reason) noexcept;
  // Throws Error naming the reason when the group is broken.
  void throw_if_broken() const;
  shm::Broken broken() const noexcept;

 private:
  std::string reason() const;
  // The first rank in [0, world) whose count is below `target`, or -1.
  int first_missing(std::uint64_t target) const noexcept;
  // A missing rank whose process is gone, or -1.
  int dead_missing(std::uint64_t target) const noexcept;

  shm::Control control_;
  const int world_;
  bool watch_peers_ = true;
  std::uint64_t entered_ = 0;  // this process's rank's count
};

}  // namespace asynctp::cpu
