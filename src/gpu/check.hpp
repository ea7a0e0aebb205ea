// Runtime statuses as asynctp errors, for either runtime (gpu/runtime.hpp).
#pragma once

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Throws Error(backend) "<CUDA|HIP> <what>: <name> (<description>)" unless
// the status is success; clears a non-sticky error first, so later calls
// start clean.
void check(rt::Status status, const char* what);

}  // namespace asynctp::gpu
