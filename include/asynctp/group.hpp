// What the in-process groups share (cpu::Group, loopback::LoopbackGroup,
// nccl::LocalGroup): the W ranks of one group, driven by this process, each
// rank's calls made on a host thread of its own. Code written against
// RankGroup (a benchmark, a test, the CLI) runs on any of them.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "asynctp/comm.hpp"

namespace asynctp {

// Enqueues rank comm.rank()'s call of iteration `i` on that rank's stream
// and returns without waiting.
using RankCall = std::function<void(Comm& comm, int iteration)>;
// Runs on rank 0's thread before its call of iteration `i`, with the time of
// iteration i - 1 once known (for a progress display).
using BeforeIteration = std::function<void(int iteration, std::optional<double> last_ms)>;

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  virtual int world_size() const noexcept = 0;
  // Throws Error(invalid_argument) naming `rank` outside [0, world_size).
  virtual Comm& comm(int rank) = 0;

  // Runs body(comm(r)) for every rank at once, each on a thread of its own
  // (on a GPU group with the rank's device current), and joins them all. If
  // any rank throws, rethrows the exception of the lowest failing rank after
  // every thread has joined.
  void run(const std::function<void(Comm&)>& body);

  // `iterations` calls on every rank, all waited for (asynctp::synchronize)
  // before it returns: one time in ms per iteration, by the group's rule
  // (each call waited for, or back to back), which knows how its
  // ranks share the hardware. Rank r's calls are ordered on streams[r] where
  // the group's rule times streams (nccl::LocalGroup; empty elsewhere). By
  // default, for ranks whose calls finish before they return (cpu::Group):
  // the slowest rank's wall time per iteration, since a call is done only
  // when every rank has its output. A rank that throws makes the others fail
  // within their wait timeout, never wait forever.
  virtual std::vector<double> time_calls(int iterations, const RankCall& call,
                                         const BeforeIteration& before = {},
                                         const std::vector<void*>& streams = {});

 protected:
  RankGroup() = default;
  // On rank `rank`'s thread before its body: what that thread must have
  // current (a GPU group makes the rank's device current). It returns before
  // the body runs.
  virtual void enter_rank_thread(int rank) { (void)rank; }
};

}  // namespace asynctp
