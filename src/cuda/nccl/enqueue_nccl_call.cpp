#include "cuda/nccl/enqueue_nccl_call.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/nccl/nccl_check.hpp"
#include "gpu/gemm_paths.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::nccl {
namespace {

using cuda::check_cuda;

std::uint32_t* flag(const gpu::RankResources& res, int piece) {
  return static_cast<std::uint32_t*>(res.flags.get()) + piece;
}

void wait(cudaStream_t stream, cudaEvent_t event, const char* what) {
  check_cuda(cudaStreamWaitEvent(stream, event, 0), what);
}

void record(cudaEvent_t event, cudaStream_t stream, const char* what) {
  check_cuda(cudaEventRecord(event, stream), what);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp32:
      return ncclFloat32;
  }
  return ncclBfloat16;
}

void barrier(const NcclCallContext& context, cudaStream_t stream) {
  check_cuda(enqueue_barrier(context.barrier, stream), "cross-rank barrier kernel launch");
}

void pull_peer_chunks(const gpu::CallSpec& call, const NcclCallContext& context,
                      gpu::RankResources& res) {
  const cudaStream_t s = res.copy_in.get();
  const std::size_t bytes = call.piece_bytes();
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    const char* source = static_cast<const char*>(context.workspace->peer_gathered(c)) +
                         call.chunk_bytes() * static_cast<std::size_t>(c);
    for (int j = 0; j < call.pieces; ++j) {
      const std::size_t offset = bytes * static_cast<std::size_t>(j);
      // cudaMemcpyDefault lets the runtime classify the copy by where the
      // pointers live (the source is the peer's memory, mapped here by
      // NCCL), so that it can be a peer copy on the copy engines. Whether it
      // is, the multi-GPU runs must show (issues 6, 7): a copy run as a kernel
      // would compete with the persistent grid for SMs.
      check_cuda(cudaMemcpyAsync(static_cast<char*>(call.gathered_chunk(c)) + offset,
                                 source + offset, bytes, cudaMemcpyDefault, s),
                 "cudaMemcpyAsync(peer workspace chunk piece to gathered)");
      gpu::write_value32(s, flag(res, c * call.pieces + j), call.epoch);
    }
    record(res.arrived[static_cast<std::size_t>(c)]->get(), s, "cudaEventRecord(arrived)");
  }
}

}  // namespace

void enqueue_nccl_call(const gpu::CallSpec& call, const NcclCallContext& context,
                       gpu::RankResources& res) {
  const cudaStream_t s = call.stream;
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  const std::size_t chunk = call.chunk_bytes();

  // The workspace and flags are shared by this rank's calls: a call on
  // another stream must not start while the previous one runs.
  if (!call.capturing && res.call_end_recorded) {
    wait(s, res.call_end.get(), "cudaStreamWaitEvent(this rank's previous call)");
  }

  if (call.plan.algorithm == Algorithm::decomposed || call.plan.algorithm == Algorithm::automatic) {
    check_nccl(ncclAllGather(context.a_shard, call.gathered,
                             static_cast<std::size_t>(call.problem.m * call.problem.k),
                             nccl_type(call.problem.dtype), context.comm, s),
               "ncclAllGather(A shards)", context.comm);
    gpu::library_lane(*context.backend, 0, "decomposed")
        .run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
  } else {
    check_cuda(
        cudaMemsetAsync(res.flags.get(), 0,
                        sizeof(std::uint32_t) * static_cast<std::size_t>(world * call.pieces), s),
        "cudaMemsetAsync(flags)");
    check_cuda(cudaMemcpyAsync(call.gathered_chunk(rank), context.a_shard, chunk,
                               cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync(local shard to workspace)");
    for (int j = 0; j < call.pieces; ++j) {
      gpu::write_value32(s, flag(res, rank * call.pieces + j), call.epoch);
    }
    barrier(context, s);  // every rank's own chunk is in its workspace

    record(res.fork.get(), s, "cudaEventRecord(fork)");
    wait(res.copy_in.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
    wait(res.compute.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
    pull_peer_chunks(call, context, res);  // the producer first, then the GEMM
    record(res.copy_in_done.get(), res.copy_in.get(), "cudaEventRecord(copy in done)");
    gpu::enqueue_gemm(call, res, *context.backend);  // native or pipelined
    record(res.compute_done.get(), res.compute.get(), "cudaEventRecord(compute done)");
    wait(s, res.copy_in_done.get(), "cudaStreamWaitEvent(copy in done)");
    wait(s, res.compute_done.get(), "cudaStreamWaitEvent(compute done)");
    barrier(context, s);  // every rank has read every workspace
  }

  if (context.a_gathered_out && context.a_gathered_out != call.gathered) {
    check_cuda(cudaMemcpyAsync(context.a_gathered_out, call.gathered, chunk * world,
                               cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync(workspace to a_gathered_out)");
  }
  if (!call.capturing) {
    record(res.call_end.get(), s, "cudaEventRecord(call end)");
    res.call_end_recorded = true;
  }
}

}  // namespace asynctp::nccl
