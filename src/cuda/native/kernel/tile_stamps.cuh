// Tile stamps: the native kernel's own timeline for a traced call. Per chunk,
// the %globaltimer (ns) at which the first of its tiles started and at which
// the last of its tiles ended, in a small buffer the host reads back once
// the call is done (gpu/device_timeline.hpp turns them into trace spans).
//
//   stamps[c]              first tile start of chunk c (atomicMin; the host
//                          sets it to all ones before the launch)
//   stamps[num_chunks + c] last tile end of chunk c (atomicMax; set to 0)
//
// Why per-chunk atomics rather than a record per CTA and tile: the buffer is
// 16 bytes per chunk whatever the grid and the tile count, so it needs no
// sizing from the launch, and the trace wants per-chunk bounds anyway. The
// price is two 64-bit atomics per tile (one start, one end) on W words, each
// against a tile of microseconds of MMA; only when tracing is on.
//
// A tile starts when its producer warp begins loading it (for the
// all-gather: once the chunk's gate has passed, so the start shows when the
// chunk's data let the GEMM begin) and ends when its epilogue has issued (the
// all-gather) or completed (the reduce-scatter, which waits for its stores
// anyway) the tile's stores.
//
// Off (stamps == nullptr, every call that is not traced): one uniform branch
// per tile in the producer and one in the epilogue, nothing else.
#pragma once

#include <cstdint>

#include "chunk_gate.cuh"

namespace asynctp::cuda::native::kernel {

// The host's std::uint64_t words, as the 64-bit atomics name them.
static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "64-bit stamps");

struct TileStampParams {
  unsigned long long* stamps = nullptr;  // 2 * num_chunks words, or null: off
  std::int32_t tiles_per_chunk_m = 1;    // CTA tiles (of tile_m rows) per chunk along M
  std::int32_t num_chunks = 0;
};

#if defined(__CUDACC__)

// ONE thread per tile (the producer warp's elected lane).
__device__ __forceinline__ void stamp_tile_start(const TileStampParams& s, int m_tile) {
  if (s.stamps == nullptr) return;
  const int chunk = m_tile / s.tiles_per_chunk_m;
  if (chunk >= s.num_chunks) return;
  atomicMin(s.stamps + chunk, static_cast<unsigned long long>(globaltimer_ns()));
}

// ONE thread per tile (the epilogue's thread 0 of the tile's MMA threads).
__device__ __forceinline__ void stamp_tile_end(const TileStampParams& s, int m_tile) {
  if (s.stamps == nullptr) return;
  const int chunk = m_tile / s.tiles_per_chunk_m;
  if (chunk >= s.num_chunks) return;
  atomicMax(s.stamps + s.num_chunks + chunk, static_cast<unsigned long long>(globaltimer_ns()));
}

#endif  // __CUDACC__

}  // namespace asynctp::cuda::native::kernel
