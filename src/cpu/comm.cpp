#include "cpu/comm.hpp"

#include <chrono>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/schedule.hpp"
#include "core/validate.hpp"
#include "cpu/algorithms.hpp"
#include "cpu/call_context.hpp"
#include "cpu/producer.hpp"
#include "cpu/reduce_scatter.hpp"
#include "cpu/shipper.hpp"

namespace asynctp::cpu {

core::BackendCaps cpu_backend_caps() {
  core::BackendCaps caps;
  caps.name = "cpu";
  caps.native_supported = true;
  caps.default_tile_m = 256;
  // Full-width tiles: a CPU worker is one core, not one of 132 SMs, so the
  // parallelism comes from rows; a wide tile widens its A rows to fp32 once
  // and gives OpenBLAS one large call instead of n/256 narrow ones.
  caps.default_tile_n = 4096;
  caps.min_pipelined_chunk_rows = 128;
  caps.no_cost_table = "the cpu backend has no cost table";
  return caps;
}

CpuComm::CpuComm(GroupLink& group, int rank)
    : group_(group),
      rank_(rank),
      signals_(group.world_size()),
      producer_(1),
      workers_(group.workers_per_rank()),
      scratch_(static_cast<std::size_t>(group.workers_per_rank())) {}

CpuComm::CpuComm(std::unique_ptr<GroupLink> group, int rank) : CpuComm(*group, rank) {
  owned_group_ = std::move(group);
}

call::CheckedCall CpuComm::check(const core::OpCall& call, const Options& options) const {
  call::CheckedCall out;
  out.resolved = core::resolve_options(options);
  out.problem = core::validate_op(call, group_.world_size(), rank_, DeviceKind::cpu);
  out.plan = core::plan(out.problem, cpu_backend_caps(), out.resolved);
  return out;
}

void CpuComm::agree(core::CallRecord& mine, std::exception_ptr& local_error,
                    const call::CheckedCall&, const core::OpCall& call, const Options&,
                    std::int64_t timeout_ms) {
  group_.agree(rank_, mine, local_error, call, timeout_ms);
}

std::uint32_t CpuComm::execute(const core::OpCall& call, const call::CheckedCall& checked,
                               const Options& options) {
  // Every rank executes every agreed call, so the ranks' epochs advance in
  // lockstep: a peer releases this rank's receive flags with its own epoch.
  epoch_ = core::next_epoch(epoch_);
  const int timed_slot = std::exchange(timed_slot_, -1);
  const auto start = std::chrono::steady_clock::now();
  switch (call.op) {
    case core::OpKind::all_gather_matmul:
      run_all_gather_matmul(call, checked, options);
      break;
    case core::OpKind::matmul_reduce_scatter:
      run_matmul_reduce_scatter(call, checked, options);
      break;
  }
  if (timed_slot >= 0) {
    timed_ms_[static_cast<std::size_t>(timed_slot)] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return epoch_;
}

std::optional<double> CpuComm::timed_call_ms(int slot, bool) {
  // Finished when execute() returned.
  return std::exchange(timed_ms_.at(static_cast<std::size_t>(slot)), std::nullopt);
}

TensorView CpuComm::gathered_workspace(const core::ProblemDesc& problem) {
  const std::size_t bytes =
      static_cast<std::size_t>(problem.gathered_rows() * problem.k) * element_size(problem.dtype);
  return TensorView::row_major(gathered_storage_.ensure(bytes, rank_, "gathered workspace"),
                               problem.dtype, problem.gathered_rows(), problem.k);
}

void CpuComm::fill_context(CallContext& ctx, const call::CheckedCall& checked,
                           const Options& options) {
  ctx.problem = checked.problem;
  ctx.plan = checked.plan;
  ctx.epoch = epoch_;
  ctx.timeout_ms = checked.resolved.wait_timeout_ms;
  ctx.signals = &signals_;
  ctx.trace = options.trace;
  ctx.hooks = &options.hooks;
}

void CpuComm::widen_b(const TensorView& b, CallContext& ctx, const Options& options) {
  const double begin = options.trace ? options.trace->now_us() : 0;
  cpu::widen_b(b, b32_);
  ctx.b32 = b32_.data();
  if (options.trace) {
    options.trace->add_span(rank_, "rank", "gemm", "widen B to fp32", begin,
                            options.trace->now_us());
  }
}

void CpuComm::run_jobs(CallContext& ctx, const Jobs& jobs, std::int64_t timeout_ms) {
  const auto on_failure_abort = [&ctx](const auto& job) {
    try {
      job();
    } catch (...) {
      ctx.abort = true;
      throw;
    }
  };
  std::exception_ptr setup_error;
  bool producer_launched = false;
  bool workers_launched = false;
  try {
    // Inside the try: a failed allocation must still reach the completion
    // barrier below, or every peer would wait out its timeout there.
    jobs.before_producer();
    producer_.launch([&](int) { on_failure_abort(jobs.producer); });
    producer_launched = true;
    jobs.before_workers();
    workers_.launch([&, members = workers_.size()](int member) {
      on_failure_abort([&] { jobs.worker(member, members); });
    });
    workers_launched = true;
  } catch (...) {
    setup_error = std::current_exception();
    ctx.abort = true;
  }

  std::exception_ptr producer_error;
  if (producer_launched) {
    try {
      producer_.wait();
    } catch (...) {
      producer_error = std::current_exception();
    }
  }
  // A peer missing at the barrier does not abort this rank's workers: their
  // waits are bounded on their own, and one that runs out names the chunk
  // and the rank that never sent it, a better report than the barrier's.
  // A peer whose process died is another matter: what it would have sent
  // never comes, so the workers stop and the barrier's report (naming that
  // rank) is the error.
  std::exception_ptr barrier_error;
  try {
    group_.barrier(rank_, "completion", timeout_ms);
  } catch (...) {
    barrier_error = std::current_exception();
    if (group_.peer_lost()) ctx.abort = true;
  }
  std::exception_ptr gemm_error;
  if (workers_launched) {
    try {
      workers_.wait();
    } catch (...) {
      gemm_error = std::current_exception();
    }
  }
  // The root cause first: a peer that died, else a GEMM timeout naming the
  // missing chunk.
  const std::exception_ptr lost_peer = group_.peer_lost() ? barrier_error : nullptr;
  for (const auto& e : {lost_peer, setup_error, gemm_error, producer_error, barrier_error}) {
    if (e) std::rethrow_exception(e);
  }
}

// The all-gather + matmul schedule: a producer thread pulls the peers' shards
// in schedule order and releases each chunk's signal; the GEMM workers
// acquire a chunk's signal before reading its rows.
void CpuComm::run_all_gather_matmul(const core::OpCall& call, const call::CheckedCall& checked,
                                    const Options& options) {
  CallContext ctx;
  fill_context(ctx, checked, options);
  ctx.shards = group_.shards(ctx.problem);
  ctx.c_out = call.out;

  std::vector<int> order;
  std::optional<core::TileSchedule> schedule;
  GemmPlan gemm_plan;
  Jobs jobs;
  jobs.before_producer = [&] {
    ctx.gathered = call.a_gathered_out ? *call.a_gathered_out : gathered_workspace(ctx.problem);
    order = producer_order(ctx, core::chunk_order(ctx.problem.world_size, rank_));
  };
  jobs.producer = [&] { run_producer(ctx, order); };
  jobs.before_workers = [&] {
    widen_b(call.b, ctx, options);  // while the first chunks are in flight
    if (ctx.plan.algorithm == Algorithm::native) {
      schedule.emplace(ctx.problem.world_size, rank_, ctx.problem.m, ctx.problem.n, ctx.plan.tile_m,
                       ctx.plan.tile_n);
      gemm_plan.schedule = &*schedule;
    }
  };
  jobs.worker = [&](int member, int members) {
    run_gemm_member(ctx, gemm_plan, member, members, scratch_[static_cast<std::size_t>(member)]);
  };
  run_jobs(ctx, jobs, checked.resolved.wait_timeout_ms);
}

void CpuComm::run_matmul_reduce_scatter(const core::OpCall& call, const call::CheckedCall& checked,
                                        const Options& options) {
  CallContext ctx;
  fill_context(ctx, checked, options);
  ctx.a = call.a;
  ctx.out = call.out;
  ctx.inboxes = group_.inboxes();

  std::vector<int> order;
  std::optional<core::TileSchedule> schedule;
  GemmPlan gemm_plan;
  Jobs jobs;
  jobs.before_producer = [&] {
    const core::ProblemDesc& p = ctx.problem;
    const std::size_t bytes =
        static_cast<std::size_t>(p.gathered_rows() * p.n) * element_size(p.dtype);
    try {
      ctx.partial =
          TensorView::row_major(partial_storage_.ensure(bytes, rank_, "partial product workspace"),
                                p.dtype, p.gathered_rows(), p.n);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::backend, "cpu: cannot allocate " + std::to_string(bytes) +
                                          " bytes for the partial product");
    }
    order = producer_order(ctx, peer_send_order(p));
    if (ctx.plan.algorithm == Algorithm::native) {
      schedule.emplace(p.world_size, (rank_ + 1) % p.world_size, p.m, p.n, ctx.plan.tile_m,
                       ctx.plan.tile_n);
      gemm_plan.schedule = &*schedule;
    }
    ctx.countdown.reset(reduce_scatter_pieces(ctx, gemm_plan, workers_.size()));
  };
  jobs.producer = [&] { run_shipper(ctx, order); };
  jobs.before_workers = [&] { widen_b(call.b, ctx, options); };
  jobs.worker = [&](int member, int members) {
    run_reduce_scatter_member(ctx, gemm_plan, member, members,
                              scratch_[static_cast<std::size_t>(member)]);
  };
  run_jobs(ctx, jobs, checked.resolved.wait_timeout_ms);
}

}  // namespace asynctp::cpu
