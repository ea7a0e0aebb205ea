// One rank of a CPU group.
#pragma once

#include <cstdint>
#include <vector>

#include "asynctp/comm.hpp"
#include "core/planner.hpp"
#include "core/signals.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/group_state.hpp"
#include "cpu/thread_team.hpp"

namespace asynctp::cpu {

// What the CPU backend can run: native with 256-row, full-width tiles.
core::BackendCaps cpu_backend_caps();

class CpuComm final : public Comm {
 public:
  CpuComm(GroupState& group, int rank);

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return group_.world_size; }
  DeviceKind device_kind() const noexcept override { return DeviceKind::cpu; }
  const char* backend_name() const noexcept override { return "cpu"; }

  RunInfo plan_fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                       const TensorView& c_out, const TensorView* a_gathered_out,
                                       const Options& options) const override;
  RunInfo fused_all_gather_matmul(const TensorView& a_shard, const TensorView& b,
                                  const TensorView& c_out, const TensorView* a_gathered_out,
                                  const Options& options) override;

 private:
  void execute(const core::CallRecord& mine, const TensorView& b, const TensorView& c_out,
               const TensorView* a_gathered_out, const Options& options, std::int64_t timeout_ms);
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
