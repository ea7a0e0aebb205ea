// Host entry of the AMD native kernel (kernel/async_input_gemm_gfx9.hip,
// compiled by hipcc): for the HIP GEMM paths, which include the HIP runtime.
#pragma once

#include <hip/hip_runtime_api.h>

#include "hip/async_input_gemm.hpp"

namespace asynctp::hip {

// Enqueues the persistent kernel on `stream` with `grid` workgroups of 8
// waves (size it with native_grid, device_topology.hpp). Returns the launch
// status.
hipError_t launch_async_input_gemm(const AsyncInputGemmArgs& args, int grid, hipStream_t stream);

}  // namespace asynctp::hip
