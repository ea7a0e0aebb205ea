#include "hip/native_launch.hpp"

#include <hip/hip_version.h>

#include <optional>
#include <string>

#include "asynctp/error.hpp"
#include "core/kernel_error_words.hpp"
#include "gpu/check.hpp"
#include "hip/device_topology.hpp"
#include "hip/launch.hpp"
#include "hip/mfma_layout.hpp"
#include "hip/native_rules.hpp"

namespace asynctp::hip {

AsyncInputGemmArgs native_args(const gpu::CallSpec& call, const std::uint32_t* flags,
                               std::uint32_t* error_words, std::uint64_t ticks_per_ms) {
  AsyncInputGemmArgs args;
  args.a = static_cast<const std::uint16_t*>(call.gathered);
  args.b = static_cast<const std::uint16_t*>(call.b.data);
  const bool b_row_major = call.problem.b_layout == core::Layout::row_major;
  // Element (kk, j) of the k x n B.
  args.b_row_stride = b_row_major ? call.problem.n : 1;
  args.b_col_stride = b_row_major ? 1 : call.problem.k;
  args.c = static_cast<std::uint16_t*>(call.c_out.data);
  call.fill_kernel_chunks(args, flags);
  args.timeout_ticks = static_cast<std::uint64_t>(call.timeout_ms) * ticks_per_ms;
  args.error_words = error_words;
  return args;
}

NativeDevice query_native_device() {
  int device = 0;
  gpu::check(hipGetDevice(&device), "hipGetDevice");
  hipDeviceProp_t props{};
  gpu::check(hipGetDeviceProperties(&props, device), "hipGetDeviceProperties");
  // s_memrealtime's rate: HIP reports it from 5.5 on; before that, the
  // constant 100 MHz of every gfx9 GPU.
  int clock_khz = 100'000;
#if HIP_VERSION_MAJOR > 5 || (HIP_VERSION_MAJOR == 5 && HIP_VERSION_MINOR >= 5)
  gpu::check(hipDeviceGetAttribute(&clock_khz, hipDeviceAttributeWallClockRate, device),
             "hipDeviceGetAttribute(wall clock rate)");
#endif
  const std::string gfx = gfx_target(props.gcnArchName);
  const std::optional<int> grid = native_grid(gfx, props.multiProcessorCount);
  if (!grid || *grid <= 0 || clock_khz <= 0) {
    throw Error(ErrorCode::unsupported, "native on HIP: no persistent-grid rule for " +
                                            std::string(props.gcnArchName) + " with " +
                                            std::to_string(props.multiProcessorCount) + " CUs");
  }
  return {*grid, static_cast<std::uint64_t>(clock_khz)};
}

void launch_native(const gpu::CallSpec& call, gpu::RankResources& res, const std::uint32_t* flags,
                   const NativeDevice& device) {
  if (call.native_kernel != kNativeKernelName) {
    throw Error(ErrorCode::backend, "native GEMM launch with unknown kernel '" +
                                        call.native_kernel + "' (HIP has " + kNativeKernelName +
                                        ")");
  }
  const AsyncInputGemmArgs args = native_args(
      call, flags, static_cast<std::uint32_t*>(res.error_words.get()), device.ticks_per_ms);
  // The kernel's tiles never straddle its chunks (the signal pieces): the
  // call's pieces must have been cut with the tile's rows as granularity.
  if (args.m_per_chunk % layout::BlockTile::m != 0) {
    throw Error(ErrorCode::unsupported, "native on HIP: signal pieces of " +
                                            std::to_string(args.m_per_chunk) +
                                            " rows are not a multiple of the kernel's tile M (" +
                                            std::to_string(layout::BlockTile::m) + ")");
  }
  gpu::check(launch_async_input_gemm(args, device.grid, res.compute.get()), "native GEMM launch");
}

std::string native_error_message(const std::uint32_t words[3], std::uint64_t timeout_ns) {
  return core::chunk_wait_error_message(std::string("native GEMM (") + kNativeKernelName + ")",
                                        words, timeout_ns);
}

}  // namespace asynctp::hip
