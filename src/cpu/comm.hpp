// One rank of a CPU group.
#pragma once

#include <cstdint>
#include <vector>

#include "call/transport.hpp"
#include "core/planner.hpp"
#include "core/signals.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/group_state.hpp"
#include "cpu/thread_team.hpp"

namespace asynctp::cpu {

// What the CPU backend can run: native with 256-row, full-width tiles.
core::BackendCaps cpu_backend_caps();

// One rank as a thread of this process: the records and barrier of the
// agreement live in the group's shared state; peers' shards are read in place.
class CpuComm final : public call::Transport {
 public:
  CpuComm(GroupState& group, int rank);

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return group_.world_size; }
  DeviceKind device_kind() const noexcept override { return DeviceKind::cpu; }
  const char* backend_name() const noexcept override { return "cpu"; }

  call::CheckedCall check(const call::OpCall& call, const Options& options) const override;
  void agree(core::CallRecord& mine, std::exception_ptr& local_error,
             const call::CheckedCall& checked, const call::OpCall& call, const Options& options,
             std::int64_t timeout_ms) override;
  std::uint32_t execute(const call::OpCall& call, const call::CheckedCall& checked,
                        const Options& options) override;
  bool synchronous() const noexcept override { return true; }

 private:
  void run_all_gather_matmul(const call::OpCall& call, const call::CheckedCall& checked,
                             const Options& options);
  TensorView gathered_workspace(const core::ProblemDesc& problem);

  GroupState& group_;
  const int rank_;
  core::ChunkSignals signals_;
  std::uint32_t epoch_ = 0;
  ThreadTeam producer_;
  ThreadTeam workers_;
  std::vector<GemmScratch> scratch_;
  std::vector<float> b32_;
  struct alignas(64) CacheLine {
    unsigned char bytes[64];
  };
  std::vector<CacheLine> gathered_storage_;
};

}  // namespace asynctp::cpu
