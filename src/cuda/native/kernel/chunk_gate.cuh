// The chunk gate: device side of the signal protocol for the native kernel.
//
// A chunk c of A (rows [c * m_per_chunk, (c + 1) * m_per_chunk)) is ready when
// flags[c] == epoch. The producer (copy engine + stream memory operation, or a
// host thread) writes the chunk's rows, then releases the flag. One lane of a
// CTA's producer warp acquires the flag at system scope (the writer may be a
// peer GPU or the host), and the warp then orders the TMA loads (the async
// proxy) after that acquire with fence.proxy.async.global.
//
// Every wait is bounded: past timeout_ns (read from %globaltimer) the lane
// records the chunk in error_words (first failure wins, by atomicCAS from 0)
// and stops waiting. Once any CTA has recorded a failure, every other wait
// gives up at its next poll too, so a missing chunk costs about one timeout,
// not one per CTA. The kernel always terminates; its result is then garbage
// and the host reports the chunk.
#pragma once

#include <cstdint>

namespace asynctp::cuda::native::kernel {

struct ChunkGateParams {
  const uint32_t* flags = nullptr;  // one per chunk
  uint32_t* error_words = nullptr;  // [0] 1 + chunk, [1] flag seen, [2] epoch
  uint64_t timeout_ns = 0;
  uint32_t epoch = 0;
  int32_t tiles_per_chunk_m = 1;    // CTA tiles (of tile_m rows) per chunk
  int32_t num_chunks = 0;
};

#if defined(__CUDACC__)

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t ld_relaxed_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Orders this thread's later async-proxy (TMA) global reads after its earlier
// generic-proxy observations (the acquire).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Called by ONE lane. Returns when flags[chunk] == epoch, or when the wait
// gave up (this lane timed out, or another CTA already recorded a timeout).
__device__ __forceinline__ void wait_for_chunk(const ChunkGateParams& gate, int chunk) {
  const uint32_t* flag = gate.flags + chunk;
  uint32_t seen = ld_acquire_sys(flag);
  if (seen == gate.epoch) return;

  const uint64_t start = globaltimer_ns();
  uint32_t backoff_ns = 32;
  while (true) {
    if (ld_relaxed_gpu(gate.error_words) != 0u) return;  // the call already failed
    __nanosleep(backoff_ns);
    backoff_ns = backoff_ns < 1024u ? backoff_ns * 2u : 1024u;
    seen = ld_acquire_sys(flag);
    if (seen == gate.epoch) return;
    if (globaltimer_ns() - start > gate.timeout_ns) {
      if (atomicCAS(gate.error_words, 0u, static_cast<uint32_t>(chunk) + 1u) == 0u) {
        atomicExch(gate.error_words + 1, seen);
        atomicExch(gate.error_words + 2, gate.epoch);
      }
      return;
    }
  }
}

#endif  // __CUDACC__

}  // namespace asynctp::cuda::native::kernel
