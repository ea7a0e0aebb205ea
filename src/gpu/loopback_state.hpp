// What the virtual ranks of one loopback group share: the host barrier and
// call records (the agreement step of core), and the events through which
// the ranks' streams are ordered with each other outside graph capture.
#pragma once

#include <memory>
#include <vector>

#include "asynctp/loopback.hpp"
#include "core/op_call.hpp"
#include "core/agreement.hpp"
#include "core/bounded_barrier.hpp"
#include "gpu/reduce_scatter_spec.hpp"
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
        chain("event create"),
        calls(static_cast<std::size_t>(c.world_size)),
        receive(static_cast<std::size_t>(c.world_size)),
        workspace_ok(static_cast<std::size_t>(c.world_size), 0),
        reduced(static_cast<std::size_t>(c.world_size), nullptr) {
    for (int r = 0; r < c.world_size; ++r) events.push_back(std::make_unique<RankEvents>());
  }

  const loopback::LoopbackConfig config;
  core::BoundedBarrier barrier;
  std::vector<core::CallRecord> records;
  std::vector<std::unique_ptr<RankEvents>> events;
  // serialize_ranks: the end of the last rank's call enqueued so far.
  Event chain;
  bool chain_recorded = false;

  // fused_matmul_reduce_scatter: each rank's agreed call (the arrival model
  // reads its peers' A and B), its receive side (published before any rank
  // enqueues, since peers write into it) and whether making it succeeded,
  // and the event of its last uncaptured reduction (null: none), which the
  // peers' next shipping into its slots waits for.
  std::vector<core::OpCall> calls;
  std::vector<ReceiveSide> receive;
  std::vector<char> workspace_ok;
  std::vector<rt::EventHandle> reduced;
};

}  // namespace asynctp::gpu
