// One rank of an NCCL communicator: the Comm of asynctp/nccl.hpp. Each rank
// has its own GPU; a peer's shard reaches it as a copy-engine pull from the
// peer's symmetric workspace (native, pipelined) or through ncclAllGather
// (decomposed). The GEMM side is the CUDA backend's (cuda/rank_backend.hpp,
// gpu/gemm_paths.hpp).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <exception>
#include <set>
#include <string>

#include "asynctp/comm.hpp"
#include "core/agreement.hpp"
#include "cuda/nccl/symmetric_workspace.hpp"
#include "cuda/rank_backend.hpp"
#include "gpu/call_check.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/resources.hpp"

namespace asynctp::nccl {

class NcclComm final : public Comm {
 public:
  // Collective: every rank of `comm` constructs its NcclComm at the same
  // time (the peer-access probe and window registrations are collective).
  // With owns_comm the destructor finalizes and destroys `comm`.
  NcclComm(ncclComm_t comm, bool owns_comm);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return world_; }
  DeviceKind device_kind() const noexcept override { return DeviceKind::cuda; }
  const char* backend_name() const noexcept override { return "cuda-nccl"; }

  RunInfo plan_fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                       const TensorView& c_out, const TensorView* a_gathered_out,
                                       const Options& options) const override;
  RunInfo fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                  const TensorView& c_out, const TensorView* a_gathered_out,
                                  const Options& options) override;
  void synchronize() override;

  int device() const noexcept { return backend_.device(); }
  // Why this rank cannot pull from its peers ("" when it can).
  const std::string& no_peer_access() const noexcept { return no_peer_access_; }

 private:
  gpu::CheckedCall check_call(const TensorView& a_shard, const TensorView& b,
                              const TensorView& c_out, const TensorView* a_gathered_out,
                              const Options& options) const;
  void agree(const core::CallRecord& mine, const std::exception_ptr& local_error,
             std::int64_t timeout_ms, cudaStream_t stream);
  void wait_for_event(cudaEvent_t event, std::int64_t timeout_ms, const std::string& what);
  void check_usable() const;

  ncclComm_t comm_;
  bool owns_comm_;
  int rank_ = 0, world_ = 1;
  cuda::CudaRankBackend backend_;
  std::string no_peer_access_;
  gpu::RankResources res_;
  SymmetricWorkspace workspace_;
  gpu::DeviceMemory barrier_state_;  // [0] generation, [1..3] error words
  gpu::DeviceMemory wire_;           // agreement records: mine, then all ranks'
  gpu::Event agreed_{"event create"};
  std::set<std::string> agreed_calls_;  // encoded records already agreed on
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
