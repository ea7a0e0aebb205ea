// What the CUDA backend can run for one problem: the planner's capabilities
// (native only on sm_90 with a kernel config whose tile granularity divides
// the chunk) and the native kernel config that goes with them.
#pragma once

#include <string>

#include "async_input_gemm.hpp"
#include "core/config.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"

namespace asynctp::cuda {

struct DeviceInfo {
  int ordinal = 0;
  int major = 0, minor = 0;
  int sm_count = 0;
  // CUDA_DEVICE_MAX_CONNECTIONS=1: every stream of the process shares one
  // hardware queue, so the producer's copies cannot run beside the GEMM.
  bool single_hardware_queue = false;
};

// Queries the current device. Throws Error(backend) when it cannot.
DeviceInfo query_device(int ordinal);

struct CudaCapsChoice {
  core::BackendCaps caps;
  // The native config planned with (tile M = its m granularity); nullptr
  // when native cannot run (caps then say why through the planner).
  const native::NativeGemmConfig* config = nullptr;
};

// The device must be current. Options' tile_m / tile_n pick the config with
// that m granularity / tile N; otherwise the measured chooser picks.
CudaCapsChoice cuda_caps(const DeviceInfo& device, const core::ProblemDesc& problem,
                         const core::ResolvedOptions& options);

}  // namespace asynctp::cuda
