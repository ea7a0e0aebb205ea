// The chunk signal: device side of the signal protocol for the native
// reduce-scatter GEMM, the mirror of chunk_gate.cuh.
//
// The GEMM writes C chunk by chunk (chunk c = rows [c * m_per_chunk,
// (c + 1) * m_per_chunk), the partial its owner, rank c, receives). Once a
// tile's stores are complete and visible, one thread of the CTA adds 1 to
// counters[c]; the tile that brings it to tiles_per_chunk is the chunk's last,
// so that thread sets counters[c] back to 0 (nothing else of this launch
// touches it again) and releases flags[c] = epoch at system scope: the reader
// is a stream memory operation ahead of a copy engine, or a peer GPU. The
// kernel waits on nothing, so the signal needs no timeout: every chunk's flag
// is set by the time the grid ends.
#pragma once

#include <cstdint>

namespace asynctp::cuda::native::kernel {

struct ChunkSignalParams {
  std::uint32_t* flags = nullptr;     // one per chunk: set to epoch when the chunk is stored
  std::uint32_t* counters = nullptr;  // one per chunk: 0 before the launch, 0 after it
  std::uint32_t epoch = 0;
  std::int32_t tiles_per_chunk_m = 1;  // CTA tiles (of tile_m rows) per chunk along M
  std::uint32_t tiles_per_chunk = 1;   // tiles_per_chunk_m * tiles along N
  std::int32_t num_chunks = 0;
};

#if defined(__CUDACC__)

__device__ __forceinline__ void st_release_sys(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Every thread that issued TMA stores (bulk groups are per thread): returns
// once this thread's bulk stores have been performed in global memory, not
// only once their shared-memory source may be reused (the .read form, which
// is all the stock epilogue waits for).
__device__ __forceinline__ void wait_bulk_stores_complete() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// ONE thread per tile, after the tile's stores are complete (above, and a
// warp barrier among the threads that issued them). The stores came through
// the async proxy: fence.proxy.async.global orders them before this thread's
// generic-proxy operations. The count is read only by this grid's tiles, so
// a GPU-scope fence orders the tile's stores before it; the chunk's last
// tile, whose count read every other tile's, then fences at system scope
// and releases: causality order is transitive (each tile's GPU-scope fence
// synchronizes with that last fence, whose scope holds both threads), so
// the reader that acquires the flag sees every tile's stores. Only the
// release pays for a system-scope fence: one per chunk, not one per tile,
// which the tile's warp group would wait for before its next MMA.
__device__ __forceinline__ void count_tile_and_release(const ChunkSignalParams& s, int m_tile) {
  const int chunk = m_tile / s.tiles_per_chunk_m;
  if (chunk >= s.num_chunks) return;
  asm volatile("fence.proxy.async.global;" ::: "memory");
  __threadfence();
  const std::uint32_t done = atomicAdd(s.counters + chunk, 1u) + 1u;
  if (done == s.tiles_per_chunk) {
    s.counters[chunk] = 0u;  // the next launch is stream-ordered after this one
    __threadfence_system();  // every tile's stores, seen through the count, before the release
    st_release_sys(s.flags + chunk, s.epoch);
  }
}

#endif  // __CUDACC__

}  // namespace asynctp::cuda::native::kernel
