#include "cuda/nccl/enqueue_nccl_call.hpp"

#include "cuda/nccl/nccl_check.hpp"
#include "gpu/check.hpp"
#include "gpu/enqueue_call.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::nccl {
namespace {

namespace rt = gpu::rt;
using gpu::record;
using gpu::wait;

void barrier(const NcclCallContext& context, rt::StreamHandle stream) {
  gpu::check(enqueue_barrier(context.barrier, stream), "cross-rank barrier kernel launch");
}

void pull_peer_chunks(const gpu::CallSpec& call, const NcclCallContext& context,
                      gpu::RankResources& res) {
  const rt::StreamHandle s = res.copy_in.get();
  const std::size_t bytes = call.piece_bytes();
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    const char* source = static_cast<const char*>(context.workspace->peer_gathered(c)) +
                         call.chunk_bytes() * static_cast<std::size_t>(c);
    for (int j = 0; j < call.pieces; ++j) {
      const std::size_t offset = bytes * static_cast<std::size_t>(j);
      // Copy::any lets the runtime classify the copy by where the pointers
      // live (the source is the peer's memory, mapped here by NCCL), so that
      // it can be a peer copy on the copy engines. Whether it is, the
      // multi-GPU full-grid test shows: a copy run as a kernel would compete
      // with the persistent grid for SMs.
      const int piece_named = call.pieces > 1 ? j : -1;
      res.trace.span(s, core::DeviceLane::copy_in, {"copy", "pull chunk", c, piece_named}, [&] {
        gpu::check(rt::memcpy_async(static_cast<char*>(call.gathered_chunk(c)) + offset,
                                    source + offset, bytes, rt::Copy::any, s),
                   "copy (peer workspace chunk piece to gathered)");
      });
      gpu::write_value32(s, res.flag(c * call.pieces + j), call.epoch);
      res.trace.instant(s, core::DeviceLane::copy_in, {"signal", "signal chunk", c, piece_named});
    }
    record(res.arrived[static_cast<std::size_t>(c)]->get(), s, "event record (arrived)");
  }
}

}  // namespace

void enqueue_nccl_call(const gpu::CallSpec& call, const NcclCallContext& context,
                       gpu::RankResources& res) {
  const rt::StreamHandle s = call.stream;
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  const std::size_t chunk = call.chunk_bytes();

  // A call on another stream must not start while the previous one runs.
  res.wait_previous_call(s, call.capturing);
  res.record_call_begin(s, call.capturing);
  res.trace.begin_call(s);

  // Fed every call's epoch, as on the loopback group (core::FlagResetRule).
  const bool reset_flags = res.flag_reset.reset_before(call.epoch, call.capturing);
  if (call.plan.algorithm == Algorithm::decomposed || call.plan.algorithm == Algorithm::automatic) {
    res.trace.span(s, core::DeviceLane::stream, {"copy", "ncclAllGather"}, [&] {
      check_nccl(ncclAllGather(context.a_shard, call.gathered,
                               static_cast<std::size_t>(call.problem.m * call.problem.k),
                               nccl_type(call.problem.dtype), context.comm, s),
                 "ncclAllGather(A shards)", context.comm);
    });
    res.trace.span(s, core::DeviceLane::stream, {"gemm", "GEMM of the gathered A"}, [&] {
      gpu::library_lane(*context.backend, 0, "decomposed")
          .run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
    });
  } else {
    // Zeroed only where a flag could hold this epoch already (a captured
    // call, or after the epochs wrapped).
    if (reset_flags) {
      gpu::check(rt::memset_async(
                     res.flags.get(), 0,
                     sizeof(std::uint32_t) * static_cast<std::size_t>(world * call.pieces), s),
                 "memset (flags)");
    }
    gpu::check(rt::memcpy_async(call.gathered_chunk(rank), context.a_shard, chunk,
                                rt::Copy::device_to_device, s),
               "copy (local shard to workspace)");
    for (int j = 0; j < call.pieces; ++j) {
      gpu::write_value32(s, res.flag(rank * call.pieces + j), call.epoch);
    }
    barrier(context, s);  // every rank's own chunk is in its workspace

    record(res.fork.get(), s, "event record (fork)");
    wait(res.copy_in.get(), res.fork.get(), "stream wait (fork)");
    wait(res.compute.get(), res.fork.get(), "stream wait (fork)");
    pull_peer_chunks(call, context, res);  // the producer first, then the GEMM
    record(res.copy_in_done.get(), res.copy_in.get(), "event record (copy in done)");
    gpu::enqueue_gemm(call, res, *context.backend);  // native or pipelined
    record(res.compute_done.get(), res.compute.get(), "event record (compute done)");
    wait(s, res.copy_in_done.get(), "stream wait (copy in done)");
    wait(s, res.compute_done.get(), "stream wait (compute done)");
    barrier(context, s);  // every rank has read every workspace
  }

  if (context.a_gathered_out && context.a_gathered_out != call.gathered) {
    gpu::check(rt::memcpy_async(context.a_gathered_out, call.gathered, chunk * world,
                                rt::Copy::device_to_device, s),
               "copy (workspace to a_gathered_out)");
  }
  res.trace.end_call(s, "all-gather + matmul");
  res.record_call_end(s, call.capturing);
}

}  // namespace asynctp::nccl
