// What the virtual ranks of one loopback group share: the host barrier and
// call records (the agreement step of core), and the events through which
// the ranks' streams are ordered with each other outside graph capture.
#pragma once

#include <memory>
#include <vector>

#include "asynctp/loopback.hpp"
#include "core/agreement.hpp"
#include "core/bounded_barrier.hpp"
#include "gpu/resources.hpp"

namespace asynctp::gpu {

struct RankEvents {
  RankEvents() : shard_ready("event create"), reads_done("event create") {}
  // Recorded on the caller's stream when the call is made: the shard's
  // writers (the caller's earlier work) are done once it completes.
  Event shard_ready;
  bool shard_ready_recorded = false;
  // Recorded after this rank's last read of any peer's shard.
  Event reads_done;
  bool reads_done_recorded = false;
};

struct LoopbackState {
  explicit LoopbackState(const loopback::LoopbackConfig& c)
      : config(c),
        barrier(c.world_size),
        records(static_cast<std::size_t>(c.world_size)),
        chain("event create") {
    for (int r = 0; r < c.world_size; ++r) events.push_back(std::make_unique<RankEvents>());
  }

  const loopback::LoopbackConfig config;
  core::BoundedBarrier barrier;
  std::vector<core::CallRecord> records;
  std::vector<std::unique_ptr<RankEvents>> events;
  // serialize_ranks: the end of the last rank's call enqueued so far.
  Event chain;
  bool chain_recorded = false;
};

}  // namespace asynctp::gpu
