// Whether this runtime can reach a device at all, asked the same way on
// either runtime by each rank backend before its own requirements. (A
// call's checks of its tensors and stream are gpu/call_check.hpp's.)
#pragma once

#include <string>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// "" when the runtime has a driver and `device` is one of its devices;
// otherwise why not, naming the runtime ("no usable CUDA driver or device
// (cudaGetDeviceCount: ...)", "no HIP device 3 (2 present)"). Each backend
// adds its own requirements on top (gpu::runtime_unavailable_reason).
std::string device_unavailable_reason(int device);

}  // namespace asynctp::gpu
