#include "gpu/device_checks.hpp"

#include <string>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

std::string device_unavailable_reason(int device) {
  int count = 0;
  const rt::Status e = rt::device_count(&count);
  if (e != rt::kSuccess) {
    rt::clear_last_error();
    return std::string("no usable ") + rt::kName + " driver or device (" + rt::kBackendName +
           "GetDeviceCount: " + rt::error_name(e) + ")";
  }
  if (device < 0 || device >= count) {
    return std::string("no ") + rt::kName + " device " + std::to_string(device) + " (" +
           std::to_string(count) + " present)";
  }
  return "";
}

}  // namespace asynctp::gpu
