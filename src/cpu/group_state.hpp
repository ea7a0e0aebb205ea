// What the ranks of one CPU group share: the barrier and, per rank, the
// record each call publishes. The records are this backend's symmetric
// workspace: every rank reads every other rank's registered shard directly.
#pragma once

#include <vector>

#include "core/agreement.hpp"
#include "core/bounded_barrier.hpp"

namespace asynctp::cpu {

struct GroupState {
  GroupState(int world, int workers)
      : world_size(world),
        workers_per_rank(workers),
        barrier(world),
        records(static_cast<std::size_t>(world)) {}

  const int world_size;
  const int workers_per_rank;
  core::BoundedBarrier barrier;
  std::vector<core::CallRecord> records;
};

}  // namespace asynctp::cpu
