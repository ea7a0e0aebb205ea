// The producer side of the loopback transports (asynctp/cuda.hpp, Link), for
// either runtime.
// Both move or release the peers' chunks without an SM, so a full persistent
// grid can wait on them: copies to and from pinned host memory run on copy
// engines, and signals are stream memory operations (on HIP the grid leaves
// room for those that run as kernels, src/hip/deadlock_rules.hpp). Each piece ends with its
// flag set to the call's epoch, and each chunk with res.arrived[c] recorded.
#pragma once

#include <cstddef>

#include "gpu/call_spec.hpp"
#include "gpu/rank_resources.hpp"

namespace asynctp::gpu {

// What `link` allocates for a call that ships `bytes` in all: the pinned
// bounce (pcie) or the release clock (arrival). Allocation can wait for the
// whole device, so transports whose ranks share one prepare every rank's
// before any rank enqueues (a peer's kernel may already wait on a chunk).
// link_ready says whether a call could run without allocating (a capture).
void prepare_link(Link link, int world_size, std::size_t bytes, RankResources& res);
bool link_ready(Link link, std::size_t bytes, const RankResources& res);

// Link::pcie: per chunk, device -> pinned bounce on copy_out, then bounce ->
// gathered on copy_in once staged; the two hops of successive chunks overlap.
// Both streams must already wait on res.fork.
void enqueue_pcie_link(const CallSpec& call, RankResources& res);

// Link::arrival, the model's own set-up on the caller's stream, ahead of the
// call's own work: places the peer chunks in the gathered buffer (device
// copies: the data the release times then stand for), registers the call's
// schedule with the rank's clock and clears its release words.
void prepare_arrival_link(const CallSpec& call, RankResources& res, rt::StreamHandle stream);

// Link::arrival: copy_in writes the start word (the clock counts the modelled
// transfer from there), waits for each piece's release word, then writes its
// flag and records the chunk's arrival event. copy_in must already wait on
// res.fork.
void enqueue_arrival_waits(const CallSpec& call, RankResources& res);

}  // namespace asynctp::gpu
