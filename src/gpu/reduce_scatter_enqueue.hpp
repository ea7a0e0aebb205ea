// The device work of one loopback rank's fused_matmul_reduce_scatter, in two
// halves the transport enqueues in turn (loopback.cpp):
//   products:  [modelled: the peers' partials of this rank's chunk, placed
//              into its slots before the timed span] -> call_begin -> fork ->
//              the partial's GEMMs in core::send_order (native: one
//              persistent grid that releases each chunk's flag once its last
//              tile is stored; pipelined: one per chunk on two lanes;
//              decomposed: one) -> each peer chunk shipped to its owner's
//              slot as its GEMM completes (native: a stream memory operation
//              waits on the chunk's flag, enqueued after the grid; pcie:
//              device -> pinned host -> owner's slot on copy engines, then
//              the owner's slot flag, or modelled over pcie the placed slot
//              out and back into itself; arrival: one thread, launched once
//              the first chunk is computed, releases each slot's flag one
//              transfer time after its chunk is computed and the link is
//              free, LinkModelArgs);
//   reduction: the own chunk computed, every slot but the last landed (a
//              one-block bounded wait on the slot flags, which each call's
//              epoch makes fresh) -> their fp32 sum, in the CPU backend's
//              order -> the last slot landed -> the last slot added, the sum
//              rounded once into out -> join -> call_end.
// Real shipping is never captured (LoopbackComm::check refuses it): separate
// graphs whose reductions wait on each other's copies cannot be ordered for
// shared hardware queues.
// With real shipping every rank enqueues its products before any rank
// enqueues its reduction, so in any FIFO hardware queue (one with
// CUDA_DEVICE_MAX_CONNECTIONS=1) the copies and flag writes a wait depends on
// are ahead of the wait. A modelled call has no wait across ranks.
#pragma once

#include "gpu/rank_backend.hpp"
#include "gpu/rank_resources.hpp"
#include "gpu/reduce_scatter_spec.hpp"

namespace asynctp::gpu {

// The native GEMM's part of a reduce-scatter call, for every transport:
// - reset_native_signals: the first `flags` flags (W x the call's pieces)
//   back to 0, on the caller's stream before the fork, where their epochs
//   cannot tell this call's from an earlier one's (a graph replays the
//   epoch it captured, so last replay's flags would look ready; the epochs
//   wrapped). The tile counters need none (RankResources::tile_counters);
// - enqueue_native_partial: the grid on res.compute (call's flags and
//   counters are the rank's), then res.computed[rank] (the own chunk, the
//   grid's last);
// - wait_native_chunk: `stream` waits (a stream memory operation: no SM)
//   until flag `flag` is set (piece j of chunk c: c * pieces + j), i.e. its
//   rows are stored. Enqueue it after the grid: then nothing in any
//   hardware queue waits ahead of the GEMM (CUDA_DEVICE_MAX_CONNECTIONS=1).
void reset_native_signals(RankResources& res, int flags, rt::StreamHandle stream);
void enqueue_native_partial(NativeReduceScatter call, RankResources& res, RankBackend& backend);
void wait_native_chunk(RankResources& res, rt::StreamHandle stream, int flag, std::uint32_t epoch);

void enqueue_rs_products(const ReduceScatterSpec& call, RankResources& res, RankBackend& backend);

// Also records res.reduced (uncaptured): the owner's slots are free again.
void enqueue_rs_reduction(const ReduceScatterSpec& call, RankResources& res);

}  // namespace asynctp::gpu
