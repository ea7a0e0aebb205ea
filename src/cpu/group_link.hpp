// What a CPU rank needs from the group it belongs to: how its ranks agree on
// a call and meet at barriers, where every rank's registered A shard and
// receive slots are. The schedules (algorithms, producer, shipper,
// reduce_scatter, reduction) and the communicator (cpu/comm.hpp) are written
// once against it; the group decides whether the ranks are threads of one
// process (cpu/group_state.hpp: plain memory) or processes of one host
// (cpu/process_group.hpp: POSIX shared memory).
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/op_call.hpp"
#include "core/agreement.hpp"
#include "cpu/inbox.hpp"

namespace asynctp::cpu {

class GroupLink {
 public:
  GroupLink(int world_size, int workers_per_rank) noexcept
      : world_size_(world_size), workers_per_rank_(workers_per_rank) {}
  virtual ~GroupLink() = default;
  GroupLink(const GroupLink&) = delete;
  GroupLink& operator=(const GroupLink&) = delete;

  int world_size() const noexcept { return world_size_; }
  int workers_per_rank() const noexcept { return workers_per_rank_; }

  // The agreement step (call::Transport::agree) for `rank`: makes what the
  // peers will read or write ready (its A shard readable, its receive slots
  // large enough), publishes `mine`, reads every rank's and throws on any
  // disagreement or failed record (its own `local_error` first). A local
  // failure while getting ready is published as a failed record. When it
  // returns, shards() and inboxes() are valid for the agreed call.
  virtual void agree(int rank, core::CallRecord& mine, std::exception_ptr& local_error,
                     const core::OpCall& call, std::int64_t timeout_ms) = 0;

  // After agree(): every rank's A shard of the agreed all-gather (m x k,
  // row-major), readable until the call's completion barrier.
  virtual std::vector<TensorView> shards(const core::ProblemDesc& problem) = 0;
  // After agree(): every rank's receive slots, by rank.
  virtual std::vector<InboxView> inboxes() = 0;

  // A bounded barrier among the ranks; throws Error(timeout) naming the
  // ranks that never arrived.
  virtual void barrier(int rank, const char* what, std::int64_t timeout_ms) = 0;

  // True once a barrier found a peer gone (its process died): nothing it
  // would have sent will come, so this rank's waits may stop at once.
  virtual bool peer_lost() const noexcept { return false; }

 private:
  const int world_size_;
  const int workers_per_rank_;
};

}  // namespace asynctp::cpu
