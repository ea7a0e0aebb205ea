// The CUDA device names gpu/partial_kernels.cu is written with, for HIP: the
// reduce-scatter's small kernels (the owner's reduction, the bounded wait on
// its slots' flags, the arrival link's model) are one source for both
// runtimes, and these are the few lines where the runtimes' device spellings
// differ. Compiled by hipcc only (src/hip/CMakeLists.txt).
#pragma once

#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <cstdint>

namespace asynctp::gpu {

// bf16: HIP 5.2's hip_bfloat16 rounds to nearest even from float, as
// __float2bfloat16_rn does (the CPU backend and the reference round alike).
using __nv_bfloat16 = hip_bfloat16;
__device__ __forceinline__ float __bfloat162float(const hip_bfloat16& v) {
  return static_cast<float>(v);
}
__device__ __forceinline__ hip_bfloat16 __float2bfloat16_rn(float v) {
  return hip_bfloat16::round_to_bfloat16(v);
}

// The wait's acquire load of a flag a peer's copy (or the host) writes:
// system scope, as ld.acquire.sys on CUDA.
__device__ __forceinline__ std::uint32_t load_acquire_sys(const std::uint32_t* p) {
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}

// The link model's release of a slot flag: system scope, as
// st.release.sys on CUDA.
__device__ __forceinline__ void store_release_sys(std::uint32_t* p, std::uint32_t v) {
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}

// Nanoseconds of a constant-rate device clock, for bounded waits and the
// link model's transfers. s_memrealtime counts at 100 MHz on CDNA2 and CDNA3
// (hipDeviceAttributeWallClockRate: 100000 kHz on MI200 and MI300); a device
// with another rate scales every timeout by the ratio, never to unbounded.
inline constexpr std::uint64_t kWallClockNsPerTick = 10;
__device__ __forceinline__ std::uint64_t globaltimer_ns() {
#if defined(__HIP_DEVICE_COMPILE__)
  return static_cast<std::uint64_t>(wall_clock64()) * kWallClockNsPerTick;
#else
  return 0;  // the host pass of a device function: never runs
#endif
}

// A short back-off between polls: s_sleep takes a constant (units of 64
// clocks, about 1 us at its maximum of 127 on a 2 GHz CU), so the requested
// length only says that the caller is waiting.
__device__ __forceinline__ void __nanosleep(unsigned) { __builtin_amdgcn_s_sleep(16); }

// How many blocks of `kernel` a compute unit holds at once.
template <class Kernel>
hipError_t occupancy_blocks_per_sm(int* blocks, Kernel kernel, int threads) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, threads, 0);
}

}  // namespace asynctp::gpu
