// The consumer half of a call: the GEMM that reads the gathered buffer as
// chunks arrive. The orchestration (gpu/enqueue_call.cpp) is written once;
// each runtime implements these paths with its own kernels and BLAS (CUDA:
// src/cuda/gemm_paths.hpp, the CUTLASS kernel and cuBLAS). Each enqueues on
// res.compute (pipelined also on res.lane2, joined back into res.compute),
// after the transport has forked res.compute from the caller's stream.
#pragma once

#include <cstdint>

#include "gpu/call_spec.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::gpu {

class GemmPaths {
 public:
  virtual ~GemmPaths() = default;

  // The native kernel: one persistent grid that waits on `flags` (one per
  // signal piece, set to call.epoch when the piece is in the gathered buffer).
  virtual void launch_native(const CallSpec& call, RankResources& res,
                             const std::uint32_t* flags) = 0;

  // Per-chunk GEMMs in schedule order (pivot first), alternating two lanes so
  // that one chunk's GEMM overlaps the next chunk's wait; chunk c waits on
  // res.arrived[c].
  virtual void enqueue_pipelined(const CallSpec& call, RankResources& res) = 0;

  // One GEMM of the whole gathered buffer once every peer chunk's
  // res.arrived event has completed.
  virtual void enqueue_decomposed(const CallSpec& call, RankResources& res) = 0;
};

}  // namespace asynctp::gpu
