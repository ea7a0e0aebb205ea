// What the CUDA backend reports to the planner for one problem.
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

// The planner's facts for `problem` on `device` (the device must be
// current): sm_90 or not, its SMs, its hardware queues, and the native
// kernel's configs with what each makes of the problem. core::plan decides.
core::BackendCaps cuda_caps(const DeviceInfo& device, const core::ProblemDesc& problem);

}  // namespace asynctp::cuda
