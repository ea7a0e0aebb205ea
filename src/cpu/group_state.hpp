// What the ranks of one CPU group share: the barrier and, per rank, the
// record each call publishes and the inbox its peers push partials into.
// The records and inboxes are this backend's symmetric workspace: every rank
// reads every other rank's registered shard, and writes every other rank's
// receive slots, directly.
#pragma once

#include <memory>
#include <vector>

#include "core/agreement.hpp"
#include "core/bounded_barrier.hpp"
#include "cpu/inbox.hpp"

namespace asynctp::cpu {

struct GroupState {
  GroupState(int world, int workers)
      : world_size(world),
        workers_per_rank(workers),
        barrier(world),
        records(static_cast<std::size_t>(world)) {
    for (int r = 0; r < world; ++r) inboxes.push_back(std::make_unique<Inbox>(world));
  }

  const int world_size;
  const int workers_per_rank;
  core::BoundedBarrier barrier;
  std::vector<core::CallRecord> records;
  std::vector<std::unique_ptr<Inbox>> inboxes;
};

}  // namespace asynctp::cpu
