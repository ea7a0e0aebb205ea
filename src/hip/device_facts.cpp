#include "hip/device_facts.hpp"

#include <hip/hip_runtime_api.h>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/runtime_backend.hpp"
#include "hip/hipblas_gemm.hpp"

namespace asynctp::hip {

HipDeviceFacts query_device_facts(int device) {
  if (const std::string why = gpu::runtime_unavailable_reason(device); !why.empty()) {
    throw Error(ErrorCode::backend, "hip: " + why);
  }
  hipDeviceProp_t props{};
  gpu::check(hipGetDeviceProperties(&props, device), "hipGetDeviceProperties");
  HipDeviceFacts facts;
  facts.gcn_arch_name = props.gcnArchName;
  facts.compute_units = props.multiProcessorCount;
  facts.hardware_queues = hardware_queues();
  facts.library_gemm_unavailable = library_gemm_unavailable_reason();
  return facts;
}

}  // namespace asynctp::hip
