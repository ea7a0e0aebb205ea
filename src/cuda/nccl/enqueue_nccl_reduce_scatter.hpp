// fused_matmul_reduce_scatter on the NCCL transport, decomposed: on the
// caller's stream, [previous call done] -> one cuBLAS GEMM of this rank's
// partial A_r @ B_r (M x n, the output dtype, rank workspace) ->
// ncclReduceScatter(sum) of the partials into out. NCCL's ring rounds each
// step's partial sum to the dtype: the error bound is
// core::nccl_reduce_scatter_error_tolerance, not the loopback's.
//
// The pipelined path (per-chunk GEMMs pushing each partial into the owner's
// symmetric-workspace slot, barriers, then the reduction kernel) is not built
// on this transport: the call check refuses it (CallSite::no_pipelined) and
// auto plans decomposed.
#pragma once

#include <nccl.h>

#include "asynctp/tensor.hpp"
#include "core/problem.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::nccl {

struct NcclReduceScatterCall {
  core::ProblemDesc problem;
  TensorView a, b, out;
  void* partial = nullptr;  // M x n in the output dtype
  gpu::rt::StreamHandle stream = nullptr;
  bool capturing = false;
};

// Why the NCCL transport plans this op decomposed only (CallSite::no_pipelined).
inline constexpr const char* kNcclReduceScatterDecomposedOnly =
    "the NCCL transport runs fused_matmul_reduce_scatter as decomposed only (one GEMM, then "
    "ncclReduceScatter): its pipelined path is not built yet";

void enqueue_nccl_reduce_scatter(const NcclReduceScatterCall& call, ncclComm_t comm,
                                 gpu::RankResources& res, gpu::RankBackend& backend);

}  // namespace asynctp::nccl
