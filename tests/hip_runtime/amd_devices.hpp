// How many AMD GPUs this process sees (0 when HIP has no driver or device):
// the hip_runtime tests that need one skip, the ones that need none skip
// where one is present.
#pragma once

#include <hip/hip_runtime_api.h>

namespace asynctp {

inline int amd_devices() {
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return count;
}

}  // namespace asynctp
