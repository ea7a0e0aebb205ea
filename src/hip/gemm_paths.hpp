// The HIP backend's GEMM paths (gpu/gemm_paths.hpp): the AMD native kernel
// (kernel/async_input_gemm_gfx9.hip) for native; hipBLAS for pipelined and
// decomposed where it was found at build time (ASYNCTP_HAVE_HIPBLAS; Debian 12
// has none, so CI builds without it and those paths say so when asked for).
// Never run on AMD hardware so far: CI compiles and links it, and the
// argument mapping (native_args) is tested on the CPU.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/gemm_paths.hpp"
#include "hip/async_input_gemm.hpp"

namespace asynctp::hip {

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

class HipGemmPaths final : public gpu::GemmPaths {
 public:
  explicit HipGemmPaths(const NativeDevice& device) : device_(device) {}

  void launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                     const std::uint32_t* flags) override;
  void enqueue_pipelined(const gpu::CallSpec& call, gpu::RankResources& res) override;
  void enqueue_decomposed(const gpu::CallSpec& call, gpu::RankResources& res) override;

 private:
  NativeDevice device_;
};

// "" when pipelined and decomposed can run (hipBLAS built in), else why not.
std::string library_gemm_unavailable_reason();

// Throws Error(unsupported) "<path> on HIP: <why>" unless hipBLAS is built
// in; the library paths call it before anything else.
void require_library_gemm(const char* path);

}  // namespace asynctp::hip
