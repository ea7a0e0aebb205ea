#include "cpu/comm.hpp"

#include <exception>
#include <optional>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/trace.hpp"
#include "call/op_rules.hpp"
#include "core/config.hpp"
#include "core/log.hpp"
#include "core/schedule.hpp"
#include "cpu/algorithms.hpp"
#include "cpu/call_context.hpp"
#include "cpu/producer.hpp"

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
  return caps;
}

CpuComm::CpuComm(GroupState& group, int rank)
    : group_(group),
      rank_(rank),
      signals_(group.world_size),
      producer_(1),
      workers_(group.workers_per_rank),
      scratch_(static_cast<std::size_t>(group.workers_per_rank)) {}

call::CheckedCall CpuComm::check(const call::OpCall& call, const Options& options) const {
  call::CheckedCall out;
  out.resolved = core::resolve_options(options);
  out.problem = call::validate_op(call, group_.world_size, rank_, DeviceKind::cpu);
  out.plan = core::plan(out.problem, cpu_backend_caps(), out.resolved);
  return out;
}

void CpuComm::agree(core::CallRecord& mine, std::exception_ptr& local_error,
                    const call::CheckedCall&, const call::OpCall&, const Options&,
                    std::int64_t timeout_ms) {
  group_.records[static_cast<std::size_t>(rank_)] = mine;
  core::agree_or_throw(group_.barrier, group_.records, rank_, timeout_ms, local_error);
}

std::uint32_t CpuComm::execute(const call::OpCall& call, const call::CheckedCall& checked,
                               const Options& options) {
  epoch_ = core::next_epoch(epoch_);
  switch (call.op) {
    case core::OpKind::all_gather_matmul:
      run_all_gather_matmul(call, checked, options);
      break;
  }
  return epoch_;
}

TensorView CpuComm::gathered_workspace(const core::ProblemDesc& problem) {
  const std::size_t bytes =
      static_cast<std::size_t>(problem.gathered_rows() * problem.k) * element_size(problem.dtype);
  const std::size_t lines = (bytes + sizeof(CacheLine) - 1) / sizeof(CacheLine);
  if (gathered_storage_.size() < lines) {
    gathered_storage_.resize(lines);
    core::log(
        core::LogLevel::info, rank_,
        "gathered workspace grown to " + std::to_string(lines * sizeof(CacheLine)) + " bytes");
  }
  return TensorView::row_major(gathered_storage_.data(), problem.dtype, problem.gathered_rows(),
                               problem.k);
}

// The all-gather + matmul schedule: a producer thread pulls the peers' shards
// in schedule order and releases each chunk's signal; the GEMM workers
// acquire a chunk's signal before reading its rows.
void CpuComm::run_all_gather_matmul(const call::OpCall& call, const call::CheckedCall& checked,
                                    const Options& options) {
  const TensorView& b = call.b;
  const TensorView* a_gathered_out = call.a_gathered_out;
  const std::int64_t timeout_ms = checked.resolved.wait_timeout_ms;

  CallContext ctx;
  ctx.problem = checked.problem;
  ctx.plan = checked.plan;
  ctx.epoch = epoch_;
  ctx.timeout_ms = timeout_ms;
  for (const core::CallRecord& record : group_.records) ctx.shards.push_back(record.shard);
  ctx.c_out = call.out;
  ctx.signals = &signals_;
  ctx.trace = options.trace;
  ctx.hooks = &options.hooks;

  // Everything launched is joined before this function returns, whatever
  // fails: the teams hold references to ctx, which lives on this stack.
  std::exception_ptr setup_error;
  std::vector<int> order;
  std::optional<core::TileSchedule> schedule;
  GemmPlan gemm_plan;
  bool producer_launched = false;
  bool workers_launched = false;
  try {
    // Inside the try: a failed allocation must still reach the completion
    // barrier below, or every peer would wait out its timeout there.
    ctx.gathered = a_gathered_out ? *a_gathered_out : gathered_workspace(checked.problem);
    order = producer_order(ctx);
    producer_.launch([&](int) {
      try {
        run_producer(ctx, order);
      } catch (...) {
        ctx.abort = true;
        throw;
      }
    });
    producer_launched = true;

    // B is widened while the first chunks are in flight.
    const double widen_begin = options.trace ? options.trace->now_us() : 0;
    widen_b(b, b32_);
    ctx.b32 = b32_.data();
    if (options.trace) {
      options.trace->add_span(rank_, "rank", "gemm", "widen B to fp32", widen_begin,
                              options.trace->now_us());
    }
    if (ctx.plan.algorithm == Algorithm::native) {
      schedule.emplace(ctx.problem.world_size, rank_, ctx.problem.m, ctx.problem.n, ctx.plan.tile_m,
                       ctx.plan.tile_n);
      gemm_plan.schedule = &*schedule;
    }
    workers_.launch([&, members = workers_.size()](int member) {
      try {
        run_gemm_member(ctx, gemm_plan, member, members,
                        scratch_[static_cast<std::size_t>(member)]);
      } catch (...) {
        ctx.abort = true;
        throw;
      }
    });
    workers_launched = true;
  } catch (...) {
    setup_error = std::current_exception();
    ctx.abort = true;
  }

  // Join the producer, then meet the peers (they have finished reading our
  // shard once every producer is done), then join the GEMM.
  std::exception_ptr producer_error;
  if (producer_launched) {
    try {
      producer_.wait();
    } catch (...) {
      producer_error = std::current_exception();
    }
  }
  std::exception_ptr barrier_error;
  try {
    group_.barrier.arrive_and_wait(rank_, "completion", timeout_ms);
  } catch (...) {
    barrier_error = std::current_exception();
    ctx.abort = true;
  }
  std::exception_ptr gemm_error;
  if (workers_launched) {
    try {
      workers_.wait();
    } catch (...) {
      gemm_error = std::current_exception();
    }
  }
  // The root cause first: a GEMM timeout names the missing chunk.
  for (const auto& e : {setup_error, gemm_error, producer_error, barrier_error}) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace asynctp::cpu
