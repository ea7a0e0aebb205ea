#include "hip/device_facts.hpp"

#include <hip/hip_runtime_api.h>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "hip/hipblas_gemm.hpp"

namespace asynctp::hip {

std::string device_unavailable_reason(int device) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess) {
    (void)hipGetLastError();
    return std::string("no usable HIP driver or device (hipGetDeviceCount: ") + hipGetErrorName(e) +
           ")";
  }
  if (device < 0 || device >= count) {
    return "no HIP device " + std::to_string(device) + " (" + std::to_string(count) + " present)";
  }
  return "";
}

HipDeviceFacts query_device_facts(int device) {
  if (const std::string why = device_unavailable_reason(device); !why.empty()) {
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
