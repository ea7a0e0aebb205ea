// fused_matmul_reduce_scatter on the NCCL transport.
//
// decomposed, on the caller's stream: [previous call done] -> one cuBLAS
//   GEMM of this rank's partial A_r @ B_r (M x n, the output dtype, rank
//   workspace) -> ncclReduceScatter(sum) into out. NCCL's ring rounds each
//   step's partial sum to the dtype: its error bound is
//   core::reduce_scatter_error_bound with PartialSum::output_dtype.
// pipelined (peers in one NVLink domain; the symmetric workspace's gathered
//   region holds this rank's W - 1 receive slots of m x n, slot i = what
//   arrives at ring step i, core::partial_slot):
//   stream:  [previous call done]; barrier 1 (every rank's previous
//            reduction has read its slots, so they may be written); fork
//   compute/lane2: per-chunk GEMMs in core::send_order (own chunk last)
//   copy_in: per step, once its chunk's GEMM is done, a copy of the partial
//            chunk into the owner's slot (its symmetric memory, mapped here:
//            a peer copy on the copy engines)
//   stream:  join; barrier 2 (every partial has landed everywhere); the
//            reduction kernel (own, then slots 0..W-2, fp32, rounded once:
//            core::reduce_scatter_error_bound with PartialSum::fp32).
// native (as pipelined, peers in one NVLink domain): the chunk flags and
//   tile counters reset on the stream, then the fork; compute: the native
//   grid (core::send_order, each chunk's flag released once its last tile
//   is stored); copy_in: per step, a stream memory operation waits for the
//   chunk's flag, then the same peer copy into the owner's slot; the same
//   join, barrier 2 and reduction. The grid waits on nothing, so a push that
//   needed an SM would only wait for the grid, never block it.
// Both barriers run on the caller's stream outside the fork (the all-gather
// path's rule); nothing waits beside a persistent grid. The barriers are
// bounded; a barrier that timed out leaves its error words set, and the
// reduction then writes nothing.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

#include "asynctp/tensor.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "cuda/nccl/enqueue_nccl_call.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::nccl {

struct NcclReduceScatterCall {
  core::ProblemDesc problem;
  core::Plan plan;
  TensorView a, b, out;
  void* partial = nullptr;    // M x n in the output dtype
  std::string native_kernel;  // native only: the config the plan chose
  std::uint32_t epoch = 1;    // native only: the value its chunk flags are set to
  gpu::rt::StreamHandle stream = nullptr;
  bool capturing = false;
};

// Bytes of the symmetric workspace's gathered region that pipelined needs
// (its W - 1 receive slots; at least a little, so a window exists at W = 1).
std::size_t reduce_scatter_slot_bytes(const core::ProblemDesc& problem);

void enqueue_nccl_reduce_scatter(const NcclReduceScatterCall& call, const NcclCallContext& context,
                                 gpu::RankResources& res);

}  // namespace asynctp::nccl
