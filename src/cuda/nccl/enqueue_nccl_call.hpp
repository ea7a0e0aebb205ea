// The device work of one NCCL rank's call, in dependency order on the
// caller's stream and the rank's side streams.
//
// native / pipelined (peers in one NVLink domain):
//   stream: [previous call done] reset flags; local shard -> own chunk of the
//           symmetric workspace; own flags; barrier 1 (every rank's chunk is
//           in place); fork
//   copy_in: for each peer in schedule order, per piece: a copy from the
//           peer's workspace chunk into ours, then the piece's flag
//           (cuStreamWriteValue32) and the chunk's arrival event
//   compute: the native kernel (waits on the flags) or per-chunk cuBLAS GEMMs
//           (wait on the arrival events)
//   stream: join; barrier 2 (every rank has finished reading every
//           workspace, so the next call may overwrite them); gathered A out
// decomposed: ncclAllGather into the workspace, then one cuBLAS GEMM.
//
// Why the persistent grid cannot deadlock here: both barriers run before the
// fork and after the join, never beside the grid; the pulls are copies and
// the signals stream memory operations, which need no SM of this GPU
// (whether a peer-to-peer cudaMemcpyAsync runs on copy engines is what the
// multi-GPU runs check; the kernel's waits are bounded either way); and the
// producer is enqueued before the GEMM (FIFO hardware queues).
#pragma once

#include <nccl.h>

#include "cuda/nccl/device_kernels.hpp"
#include "cuda/nccl/symmetric_workspace.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::nccl {

struct NcclCallContext {
  ncclComm_t comm = nullptr;
  SymmetricWorkspace* workspace = nullptr;
  BarrierArgs barrier;  // everything but the stream
  const void* a_shard = nullptr;
  void* a_gathered_out = nullptr;  // optional
  // The GEMMs; decomposed runs library lane 0 on the caller's stream.
  gpu::RankBackend* backend = nullptr;
};

void enqueue_nccl_call(const gpu::CallSpec& call, const NcclCallContext& context,
                       gpu::RankResources& res);

}  // namespace asynctp::nccl
