// One virtual rank of a loopback group (asynctp/loopback.hpp): the Comm the
// user calls, on either runtime (the rank's RankBackend).
#pragma once

#include <cstdint>
#include <memory>

#include "call/transport.hpp"
#include "gpu/call_check.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/loopback_state.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/reduce_scatter_spec.hpp"

namespace asynctp::gpu {

class LoopbackComm final : public GpuTransport {
 public:
  LoopbackComm(LoopbackState& group, int rank, std::unique_ptr<RankBackend> backend);

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return group_.config.world_size; }
  const char* backend_name() const noexcept override { return backend_->name(); }

  void agree(core::CallRecord& mine, std::exception_ptr& local_error,
             const call::CheckedCall& checked, const core::OpCall& call, const Options& options,
             std::int64_t timeout_ms) override;
  std::uint32_t execute(const core::OpCall& call, const call::CheckedCall& checked,
                        const Options& options) override;
  void synchronize() override;

  // LoopbackGroup::last_call_ms.
  double last_call_ms() const;

 private:
  CallSite site() const override;
  RankResources& resources() override { return res_; }
  // The loopback models' limits: what serialized ranks and the pcie link
  // cannot run, and what a graph capture cannot hold.
  void check_own_rules(const core::OpCall& call, const CheckedCall& checked) const override;
  CallSpec make_spec(const CheckedCall& checked, const core::OpCall& call, const Options& options);
  // fused_matmul_reduce_scatter's execute (gpu/reduce_scatter_enqueue.hpp).
  std::uint32_t execute_reduce_scatter(const core::OpCall& call, const CheckedCall& checked,
                                       const Options& options);
  // Allocation can wait for the whole device, which the ranks share: a rank
  // growing its workspace after a peer enqueued a kernel that waits on a
  // chunk would stall behind that wait. So every rank makes what its call
  // needs (workspace, link resources, library GEMM handles), the ranks meet,
  // and only then does any rank enqueue. Throws on every rank when one rank
  // could not (a capture that would have to allocate, an allocation failure).
  // A traced call also makes its device trace's events and stamp buffer.
  void prepare_every_rank(const CheckedCall& checked, const core::OpCall& call,
                          const Options& options, std::int64_t timeout_ms);
  // Whether the call records its device timeline (Options::trace, and not
  // captured: a graph's replays are not this call).
  static bool traced(const CheckedCall& checked, const Options& options);
  void prepare_all_gather_workspace(const CheckedCall& checked, const core::OpCall& call);
  // Whether this group's reduce-scatter places the peers' partials before
  // the timed span (ReduceScatterSpec::modelled): the arrival link, and
  // ranks that run one after another, which could not ship to each other.
  bool peers_placed() const;
  // Makes this rank's partial, slots and flags and publishes its receive
  // side; throws when a capture would have to allocate.
  void prepare_rs_workspace(const CheckedCall& checked);
  ReduceScatterSpec make_rs_spec(const CheckedCall& checked, const core::OpCall& call,
                                 const Options& options);

  // Makes `stream` wait for `event` of every peer that recorded it: the
  // peers' shard writers before this rank reads their inputs, or the peers'
  // last reads of this rank's inputs before the caller may overwrite them.
  void wait_for_peers(rt::StreamHandle stream, Event RankEvents::*event, bool RankEvents::*recorded,
                      const char* what) const;
  // The end of an enqueue that did not fail and is not captured: the stream
  // waits for the peers' reads of this rank's inputs (where peers read them),
  // then records call_done for synchronize(). Rethrows the enqueue's error,
  // or the first error of these steps.
  void finish_enqueue(rt::StreamHandle stream, bool capturing, bool peers_read_inputs,
                      std::exception_ptr enqueue_error);

  LoopbackState& group_;
  const int rank_;
  RankResources res_;
  std::uint32_t epoch_ = 0;
  // The last call not yet synchronized, for synchronize()'s bound and message.
  bool pending_ = false;
  std::int64_t pending_timeout_ms_ = 0;
  std::uint32_t pending_epoch_ = 0;
  int pending_pieces_ = 1;
  bool pending_reduce_scatter_ = false;  // what the error words of the last call mean
  // Whether call_begin/call_end hold an uncaptured call that synchronize()
  // has seen finish.
  bool timed_call_done_ = false;
  bool timed_call_enqueued_ = false;
};

}  // namespace asynctp::gpu
