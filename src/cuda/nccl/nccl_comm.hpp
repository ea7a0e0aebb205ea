// One rank of an NCCL communicator: the transport of asynctp/nccl.hpp. Each
// rank has its own GPU; a peer's shard reaches it as a copy-engine pull from
// the peer's symmetric workspace (native, pipelined) or through
// ncclAllGather (decomposed). Written over the runtime layer (gpu::rt) and a
// RankBackend, like the loopback transport, so that nothing here names CUDA.
//
// Every host wait is bounded. The ranks agree through an NCCL all-gather of
// fixed-size records; one that does not complete in time (a rank failed, left
// or makes another call) aborts the NCCL communicator, the only way to free
// the collective stuck on it, and the error says so on every rank that waited.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "call/transport.hpp"
#include "core/agreement.hpp"
#include "cuda/nccl/enqueue_nccl_call.hpp"
#include "cuda/nccl/symmetric_workspace.hpp"
#include "gpu/call_check.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/resources.hpp"

namespace asynctp::nccl {

class NcclComm final : public gpu::GpuTransport {
 public:
  // Collective: every rank of `comm` constructs its NcclComm at the same
  // time (the peer-access probe is collective). With owns_comm the destructor
  // finalizes and destroys `comm`.
  NcclComm(ncclComm_t comm, bool owns_comm);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return world_; }
  const char* backend_name() const noexcept override;

  void check_usable() const override;
  void agree(core::CallRecord& mine, std::exception_ptr& local_error,
             const call::CheckedCall& checked, const core::OpCall& call, const Options& options,
             std::int64_t timeout_ms) override;
  std::uint32_t execute(const core::OpCall& call, const call::CheckedCall& checked,
                        const Options& options) override;
  void synchronize() override;

  int device() const noexcept { return backend_->device(); }
  // Why this rank cannot pull from its peers ("" when it can).
  const std::string& no_peer_access() const noexcept { return no_peer_access_; }

 private:
  // Where the peers cannot be pulled, or their pulls need the SMs native
  // holds, the site says so: the planner then picks what can run.
  gpu::CallSite site() const override;
  gpu::RankResources& resources() override { return *res_; }
  // Every rank's record, through a bounded all-gather on `stream`.
  std::vector<core::CallRecord> exchange(const core::CallRecord& mine, gpu::rt::StreamHandle stream,
                                         std::int64_t timeout_ms, const std::string& what);
  // Waits for `event`; past timeout_ms aborts the communicator and throws.
  void wait_or_abort(gpu::rt::EventHandle event, std::int64_t timeout_ms, const std::string& what);
  // Marks the communicator unusable and aborts the NCCL communicator.
  void abort_communicator(const std::string& why) noexcept;
  // Collective growth of the symmetric workspace (every rank agreed to it).
  void grow_workspace(std::size_t gathered_bytes, gpu::rt::StreamHandle stream,
                      std::int64_t timeout_ms);
  // Measures, once, whether the pulls' copies need SMs beside the native
  // grid (peer_copy_probe.hpp); the ranks agree on the verdict, so that
  // every rank plans alike. Collective.
  void probe_peer_copies(std::int64_t timeout_ms);
  // Bytes of the gathered A a call needs in the symmetric workspace; 0 when
  // its algorithm does not pull from peers (decomposed).
  std::size_t workspace_bytes(const call::CheckedCall& checked) const;
  // Grows the symmetric workspace's gathered region to `bytes` when needed
  // (collective: every rank agreed to it) and restarts the barrier
  // generations on new memory.
  void prepare_workspace(std::size_t bytes, gpu::rt::StreamHandle stream, std::int64_t timeout_ms,
                         bool capturing);
  // Starts recording this rank's call's device timeline when it is traced
  // and not captured (gpu/device_trace.hpp), its events and stamps made
  // first; otherwise the recording is off.
  void start_trace(const call::CheckedCall& checked, const Options& options);
  // The pieces of a call's device work every op shares: the communicator,
  // the workspace, the barrier, the backend.
  NcclCallContext call_context(std::int64_t timeout_ms);
  // fused_matmul_reduce_scatter (enqueue_nccl_reduce_scatter.hpp).
  std::uint32_t execute_reduce_scatter(const core::OpCall& call, const call::CheckedCall& checked,
                                       const Options& options);

  ncclComm_t comm_;
  bool owns_comm_;
  bool aborted_ = false;
  int rank_ = 0, world_ = 1;
  std::string no_peer_access_;
  std::string peer_copy_blocker_;  // why native must not run here ("" when it may)
  std::unique_ptr<gpu::RankResources> res_;
  SymmetricWorkspace workspace_;
  gpu::DeviceMemory barrier_state_;  // [0] generation, [1..3] error words
  gpu::DeviceMemory wire_;           // agreement records: mine, then all ranks'
  gpu::PinnedMemory wire_host_;      // the same, on the host (pageable would block)
  gpu::Event exchanged_{"event create (agreement)"};
  // Encoded records already agreed on, and the plan the group agreed for each.
  std::map<std::string, core::Plan> agreed_calls_;
  int workspace_generation_seen_ = 0;
  std::uint32_t epoch_ = 0;
  std::string broken_;  // set when the communicator can no longer be trusted
  // The last call not yet synchronized, for synchronize()'s bound and message.
  bool pending_ = false;
  std::int64_t pending_timeout_ms_ = 0;
  std::uint32_t pending_epoch_ = 0;
  int pending_pieces_ = 1;
};

}  // namespace asynctp::nccl
