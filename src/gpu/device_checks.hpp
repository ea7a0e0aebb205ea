// Checks every GPU communicator makes the same way on either runtime: a
// tensor really lives in this rank's device memory (a host pointer would
// fault inside a kernel, far from the mistake), and whether the caller's
// stream is capturing a graph.
#pragma once

#include <string>

#include "asynctp/tensor.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Throws Error(invalid_argument) "<name>: <rule>" unless `t` says it is on
// `device` and the runtime agrees that t.data is device (or managed) memory
// of that device.
void check_on_device(const char* name, const TensorView& t, int device);

// "" when the runtime has a driver and `device` is one of its devices;
// otherwise why not, naming the runtime ("no usable CUDA driver or device
// (cudaGetDeviceCount: ...)", "no HIP device 3 (2 present)"). Each backend
// adds its own requirements on top (gpu::runtime_unavailable_reason).
std::string device_unavailable_reason(int device);

// Whether `stream` is capturing a graph; throws Error(backend) when the
// runtime cannot tell.
bool stream_is_capturing(rt::StreamHandle stream);

}  // namespace asynctp::gpu
