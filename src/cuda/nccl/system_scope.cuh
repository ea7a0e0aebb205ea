// System-scope loads and stores and the global timer, for the NCCL
// transport's small kernels: flags another GPU (or the host) writes are read
// with acquire, written with release, and every wait is bounded by the timer.
#pragma once

#include <cstdint>

namespace asynctp::nccl {

__device__ __forceinline__ std::uint32_t load_acquire_sys(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release_sys(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace asynctp::nccl
