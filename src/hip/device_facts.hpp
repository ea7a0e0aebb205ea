// What the HIP backend reads from the device and the process before it plans
// (hip/backend_caps.hpp): the device's target and CUs, the hardware queues
// (GPU_MAX_HW_QUEUES) and whether this build has a library GEMM. Built with
// the HIP runtime (asynctp_gpu_hip); the HIP rank backend calls it once
// per rank.
#pragma once

#include <string>

#include "hip/backend_caps.hpp"

namespace asynctp::hip {

// The facts of `device`. Throws Error(backend) with
// gpu::runtime_unavailable_reason when there is no such device,
// Error(invalid_argument) for a bad GPU_MAX_HW_QUEUES.
HipDeviceFacts query_device_facts(int device);

}  // namespace asynctp::hip
