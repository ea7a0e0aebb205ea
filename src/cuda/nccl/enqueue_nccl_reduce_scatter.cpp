#include "cuda/nccl/enqueue_nccl_reduce_scatter.hpp"

#include <algorithm>
#include <vector>

#include "core/schedule.hpp"
#include "cuda/nccl/nccl_check.hpp"
#include "gpu/check.hpp"
#include "gpu/partial_kernels.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/reduce_scatter_enqueue.hpp"

namespace asynctp::nccl {
namespace {

namespace rt = gpu::rt;
using gpu::record;
using gpu::wait;

std::size_t chunk_bytes(const core::ProblemDesc& p) {
  return static_cast<std::size_t>(p.m * p.n) * element_size(p.dtype);
}

const void* a_rows(const TensorView& a, std::int64_t row) {
  return static_cast<const char*>(a.data) +
         static_cast<std::size_t>(row * a.cols) * element_size(a.dtype);
}

void barrier(const NcclCallContext& context, rt::StreamHandle stream) {
  gpu::check(enqueue_barrier(context.barrier, stream), "cross-rank barrier kernel launch");
}

void enqueue_decomposed(const NcclReduceScatterCall& call, const NcclCallContext& context) {
  const rt::StreamHandle s = call.stream;
  gpu::library_lane(*context.backend, 0, "decomposed")
      .run(s, call.a.data, call.problem.gathered_rows(), call.b, call.partial);
  check_nccl(ncclReduceScatter(call.partial, call.out.data,
                               static_cast<std::size_t>(call.problem.m * call.problem.n),
                               nccl_type(call.problem.dtype), ncclSum, context.comm, s),
             "ncclReduceScatter(partials)", context.comm);
}

// Per-chunk library GEMMs (pipelined) or the native grid, each finished
// peer chunk pushed to its owner as soon as it is computed.
void enqueue_overlapped(const NcclReduceScatterCall& call, const NcclCallContext& context,
                        gpu::RankResources& res) {
  const rt::StreamHandle s = call.stream;
  const core::ProblemDesc& p = call.problem;
  const int world = p.world_size;
  const std::size_t bytes = chunk_bytes(p);
  char* partial = static_cast<char*>(call.partial);

  const bool native = call.plan.algorithm == Algorithm::native;
  barrier(context, s);  // every owner's slots are free again
  // The chunk flags are fresh by their epoch, except where a graph replays
  // the call it captured or once the epochs have wrapped (the rule every
  // op's calls feed; the grid's tile counters need no reset: it leaves them 0).
  const bool stale = res.flag_reset.reset_before(call.epoch, call.capturing);
  if (native && stale) gpu::reset_native_signals(res, world, s);
  record(res.fork.get(), s, "event record (fork)");
  for (rt::StreamHandle side : {res.copy_in.get(), res.compute.get(), res.lane2.get()}) {
    wait(side, res.fork.get(), "stream wait (fork)");
  }
  const std::vector<int> order = core::send_order(world, p.rank);
  if (native) {
    gpu::enqueue_native_partial({p, call.native_kernel, call.a, call.b, call.partial, call.epoch,
                                 /*sms_left_free=*/0, nullptr, nullptr},
                                res, *context.backend);
  } else {
    gpu::LibraryGemm* lanes[2] = {&gpu::library_lane(*context.backend, 0, "pipelined"),
                                  &gpu::library_lane(*context.backend, 1, "pipelined")};
    const rt::StreamHandle streams[2] = {res.compute.get(), res.lane2.get()};
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int c = order[i];
      const int lane = static_cast<int>(i % 2);
      res.trace.span(streams[lane], lane == 0 ? core::DeviceLane::compute : core::DeviceLane::lane2,
                     {"gemm", "GEMM chunk", c}, [&] {
                       lanes[lane]->run(streams[lane], a_rows(call.a, c * p.m), p.m, call.b,
                                        partial + bytes * static_cast<std::size_t>(c));
                     });
      record(res.computed[static_cast<std::size_t>(c)]->get(), streams[lane],
             "event record (partial chunk computed)");
    }
  }
  // The producer: each finished peer chunk pushed into its owner's slot
  // (after the grid: the flag waits sit behind it in any hardware queue).
  for (int step = 0; step + 1 < world; ++step) {
    const int owner = order[static_cast<std::size_t>(step)];
    if (native) {
      gpu::wait_native_chunk(res, res.copy_in.get(), owner, call.epoch);
    } else {
      wait(res.copy_in.get(), res.computed[static_cast<std::size_t>(owner)]->get(),
           "stream wait (partial chunk computed)");
    }
    char* slot = static_cast<char*>(const_cast<void*>(context.workspace->peer_gathered(owner))) +
                 bytes * static_cast<std::size_t>(step);
    // Copy::any: the runtime classifies the copy by where the pointers live
    // (the destination is the owner's memory, mapped here by NCCL), so that
    // it runs as a peer copy on the copy engines.
    res.trace.span(res.copy_in.get(), core::DeviceLane::copy_in,
                   {"copy", "to owner's slot: partial", owner}, [&] {
                     gpu::check(
                         rt::memcpy_async(slot, partial + bytes * static_cast<std::size_t>(owner),
                                          bytes, rt::Copy::any, res.copy_in.get()),
                         "copy (partial chunk to the owner's slot)");
                   });
  }
  wait(res.compute.get(), res.computed[static_cast<std::size_t>(p.rank)]->get(),
       "stream wait (own chunk computed)");
  record(res.copy_in_done.get(), res.copy_in.get(), "event record (copy in done)");
  record(res.lane2_done.get(), res.lane2.get(), "event record (lane 2 done)");
  record(res.compute_done.get(), res.compute.get(), "event record (compute done)");
  for (rt::EventHandle done :
       {res.copy_in_done.get(), res.lane2_done.get(), res.compute_done.get()}) {
    wait(s, done, "stream wait (join)");
  }
  barrier(context, s);  // every partial has landed in every owner's slots

  gpu::ReduceArgs args;
  args.dtype = p.dtype;
  args.rows = p.m;
  args.cols = p.n;
  args.own = partial + bytes * static_cast<std::size_t>(p.rank);
  args.slots = context.workspace->gathered();
  args.slot_count = world - 1;
  args.out = call.out.data;
  args.error_words = context.barrier.error_words;  // a barrier that timed out
  res.trace.span(s, core::DeviceLane::stream, {"reduce", "reduce the partials"}, [&] {
    gpu::check(gpu::enqueue_reduce_partials(args, s), "launch (reduction of the partials)");
  });
}

}  // namespace

std::size_t reduce_scatter_slot_bytes(const core::ProblemDesc& problem) {
  return std::max<std::size_t>(
      chunk_bytes(problem) * static_cast<std::size_t>(problem.world_size - 1), 256);
}

void enqueue_nccl_reduce_scatter(const NcclReduceScatterCall& call, const NcclCallContext& context,
                                 gpu::RankResources& res) {
  const rt::StreamHandle s = call.stream;
  // The partial is shared by this rank's calls: a call on another stream
  // must not overwrite it while the previous one still reads it.
  res.wait_previous_call(s, call.capturing);
  res.record_call_begin(s, call.capturing);
  res.trace.begin_call(s);
  if (call.plan.algorithm == Algorithm::pipelined || call.plan.algorithm == Algorithm::native) {
    enqueue_overlapped(call, context, res);
  } else {
    res.trace.span(s, core::DeviceLane::stream, {"gemm", "GEMM and ncclReduceScatter"},
                   [&] { enqueue_decomposed(call, context); });
  }
  res.trace.end_call(s, "matmul + reduce-scatter");
  res.record_call_end(s, call.capturing);
}

}  // namespace asynctp::nccl
