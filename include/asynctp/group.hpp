// What the in-process groups share (cpu::Group, loopback::LoopbackGroup,
// nccl::LocalGroup): the W ranks of one group, driven by this process, each
// rank's calls made on a host thread of its own. Code written against
// RankGroup (a benchmark, a test, the CLI) runs on any of them.
#pragma once

#include <functional>

#include "asynctp/comm.hpp"

namespace asynctp {

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

 protected:
  RankGroup() = default;
  // On rank `rank`'s thread before its body: what that thread must have
  // current (a GPU group makes the rank's device current). It returns before
  // the body runs.
  virtual void enter_rank_thread(int rank) { (void)rank; }
};

}  // namespace asynctp
