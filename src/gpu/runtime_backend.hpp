// The rank backend of the runtime this translation unit is compiled for
// (gpu/runtime.hpp's choice): the transports written once over the runtime
// layer make their ranks' backends through these two names.
#pragma once

#if defined(ASYNCTP_GPU_HIP)
#include "hip/rank_backend.hpp"
#else
#include "cuda/rank_backend.hpp"
#endif

namespace asynctp::gpu {

#if defined(ASYNCTP_GPU_HIP)
using hip::make_rank_backend;
using hip::runtime_unavailable_reason;
#else
using cuda::make_rank_backend;
using cuda::runtime_unavailable_reason;
#endif

}  // namespace asynctp::gpu
