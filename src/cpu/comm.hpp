// One rank of a CPU group.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "call/transport.hpp"
#include "core/planner.hpp"
#include "core/signals.hpp"
#include "core/tuning.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/call_context.hpp"
#include "cpu/group_link.hpp"
#include "cpu/thread_team.hpp"
#include "cpu/workspace.hpp"

namespace asynctp::cpu {

// What the CPU backend can run: native (both ops) with 256-row, full-width
// tiles.
core::BackendCaps cpu_backend_caps();

// GEMM workers per rank for a request (0 = ASYNCTP_CPU_WORKERS, else the
// hardware threads shared by `world_size` ranks, at least 2). Throws
// Error(invalid_argument) naming `argument` when out of range.
int resolve_gemm_workers(int requested, int world_size, const char* argument);

// One rank of a CPU group: the records and barrier of the agreement, the
// peers' shards it reads and the inboxes it writes partials into are the
// group's (cpu/group_link.hpp), whether its ranks are threads or processes.
class CpuComm final : public call::Transport {
 public:
  // A rank of an in-process group, which outlives it.
  CpuComm(GroupLink& group, int rank);
  // The one rank of this process in a group of processes: it owns its link.
  CpuComm(std::unique_ptr<GroupLink> group, int rank);

  int rank() const noexcept override { return rank_; }
  int world_size() const noexcept override { return group_.world_size(); }
  DeviceKind device_kind() const noexcept override { return DeviceKind::cpu; }
  const char* backend_name() const noexcept override { return "cpu"; }

  call::CheckedCall check(const core::OpCall& call, const Options& options) const override;
  void agree(core::CallRecord& mine, std::exception_ptr& local_error,
             const call::CheckedCall& checked, const core::OpCall& call, const Options& options,
             std::int64_t timeout_ms) override;
  std::uint32_t execute(const core::OpCall& call, const call::CheckedCall& checked,
                        const Options& options) override;
  bool synchronous() const noexcept override { return true; }
  void time_next_call(int slot) override { timed_slot_ = slot; }
  std::optional<double> timed_call_ms(int slot, bool wait) override;

 private:
  // One call's work on this rank's two teams: the producer's job and every
  // GEMM worker's, each after its setup.
  struct Jobs {
    std::function<void()> before_producer;
    std::function<void()> producer;
    std::function<void()> before_workers;
    std::function<void(int member, int members)> worker;
  };
  // Launches the jobs and joins them whatever fails (the teams hold
  // references to ctx): the producer, then the completion barrier (after it
  // every peer's producer is done with this rank's memory), then the
  // workers. Rethrows the root cause first: setup, GEMM, producer, barrier.
  void run_jobs(CallContext& ctx, const Jobs& jobs, std::int64_t timeout_ms);
  void fill_context(CallContext& ctx, const call::CheckedCall& checked, const Options& options);
  void widen_b(const TensorView& b, CallContext& ctx, const Options& options);

  void run_all_gather_matmul(const core::OpCall& call, const call::CheckedCall& checked,
                             const Options& options);
  // The GEMM workers compute the partial product in send order and release
  // each chunk's signal; the producer ships finished chunks to their owners;
  // the workers then reduce the own chunk (shipper.hpp, reduce_scatter.hpp).
  void run_matmul_reduce_scatter(const core::OpCall& call, const call::CheckedCall& checked,
                                 const Options& options);
  TensorView gathered_workspace(const core::ProblemDesc& problem);

  std::unique_ptr<GroupLink> owned_group_;
  GroupLink& group_;
  const int rank_;
  core::ChunkSignals signals_;
  std::uint32_t epoch_ = 0;
  // The measured choice's clock: execute()'s wall time, kept in the slot
  // time_next_call armed.
  int timed_slot_ = -1;
  std::array<std::optional<double>, core::kTimedCallSlots> timed_ms_{};
  ThreadTeam producer_;
  ThreadTeam workers_;
  std::vector<GemmScratch> scratch_;
  std::vector<float> b32_;
  Workspace gathered_storage_;  // all-gather: the gathered A
  Workspace partial_storage_;   // reduce-scatter: this rank's partial product
};

}  // namespace asynctp::cpu
