// The AMD native kernel (kernel/async_input_gemm_gfx9.hip) as the HIP rank
// backend launches it: its arguments from a call, the device facts it needs,
// the launch, its error words as text. Never run on AMD hardware so far: CI
// compiles and links it, and the argument mapping (native_args) is tested on
// the CPU.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/call_spec.hpp"
#include "gpu/rank_resources.hpp"
#include "hip/async_input_gemm.hpp"

namespace asynctp::hip {

// The kernel's name in plans (RunInfo::reason) and call specs.
inline constexpr const char* kNativeKernelName = "mfma_bf16_256x256x32";

// What the native kernel needs to know about the device.
struct NativeDevice {
  int grid = 0;                    // workgroups (native_grid, device_topology.hpp)
  std::uint64_t ticks_per_ms = 0;  // s_memrealtime rate (hipDeviceAttributeWallClockRate, kHz)
};

// The kernel's arguments for `call`: its chunks are the call's signal pieces
// (same rows, same order, the pivot chunk's first piece first), B's strides
// follow its layout, the timeout is in the device clock's ticks.
AsyncInputGemmArgs native_args(const gpu::CallSpec& call, const std::uint32_t* flags,
                               std::uint32_t* error_words, std::uint64_t ticks_per_ms);

// The device facts of the current HIP device; throws Error(unsupported) naming
// the device's target when the native kernel has no grid rule for it.
NativeDevice query_native_device();

// Enqueues the kernel for `call` on res.compute. Throws Error(unsupported)
// when the call's signal pieces are not whole tiles.
void launch_native(const gpu::CallSpec& call, gpu::RankResources& res, const std::uint32_t* flags,
                   const NativeDevice& device);

// The kernel's error words ([0] 1 + chunk, [1] flag seen, [2] epoch) as text.
std::string native_error_message(const std::uint32_t words[3], std::uint64_t timeout_ns);

}  // namespace asynctp::hip
