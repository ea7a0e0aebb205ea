// The two small kernels of the NCCL transport. Neither runs beside the
// persistent GEMM: both are ordered on the caller's stream before the fork or
// after the join (enqueue_nccl_call.cpp).
#pragma once

#include <nccl.h>

#include <cstdint>

#include "gpu/runtime.hpp"

namespace asynctp::nccl {

// Writes ncclGetPeerPointer(window, offset, p) for p in [0, world) to
// out_device[p] (device memory): the peers' buffers mapped into this
// process's address space, valid for peers in this rank's NVLink domain.
gpu::rt::Status enqueue_peer_pointers(ncclWindow_t window, int world, void** out_device,
                                      gpu::rt::StreamHandle stream);

// A bounded cross-rank barrier over symmetric memory, in stream order. Each
// rank's sync area holds one word per peer. The barrier's generation g is
// *generation + 1 (device memory, so graph replays keep counting): this rank
// stores g into word [rank] of every peer's area (system-scope release), then
// waits until every word of its own area has reached g (system-scope
// acquire), then sets *generation = g. Past timeout_ns the wait stops and
// error_words get [0] = 1 + the first peer not seen, [1] = the value seen,
// [2] = g (first failure wins).
struct BarrierArgs {
  std::uint32_t* const* peer_sync_areas = nullptr;  // device array of world pointers
  const std::uint32_t* my_sync_area = nullptr;
  std::uint32_t* generation = nullptr;
  std::uint32_t* error_words = nullptr;
  int rank = 0;
  int world = 1;
  std::uint64_t timeout_ns = 0;
};
gpu::rt::Status enqueue_barrier(const BarrierArgs& args, gpu::rt::StreamHandle stream);

}  // namespace asynctp::nccl
