// The consumer half of a call, the same for every transport: the GEMM that
// reads the gathered buffer as chunks arrive. Each enqueues on res.compute
// (pipelined also on res.lane2, joined back into res.compute), after the
// transport has forked res.compute from the caller's stream.
#pragma once

#include <cstdint>

#include "cuda/call_spec.hpp"
#include "cuda/rank_resources.hpp"

namespace asynctp::cuda {

// The native kernel: one persistent grid that waits on `flags` (one per
// signal piece, set to call.epoch when the piece is in the gathered buffer).
void launch_native(const CallSpec& call, RankResources& res, const std::uint32_t* flags);

// Per-chunk cuBLAS GEMMs in schedule order (pivot first), alternating two
// lanes so that one chunk's GEMM overlaps the next chunk's wait; chunk c
// waits on res.arrived[c].
void enqueue_pipelined(const CallSpec& call, RankResources& res);

// One cuBLAS GEMM of the whole gathered buffer once every peer chunk's
// res.arrived event has completed.
void enqueue_decomposed(const CallSpec& call, RankResources& res);

}  // namespace asynctp::cuda
