// NCCL statuses as asynctp errors.
#pragma once

#include <nccl.h>

#include "asynctp/tensor.hpp"

namespace asynctp::nccl {

// Throws Error(backend) "NCCL <what>: <error string> (<last error>)" unless
// ncclSuccess. `comm` (may be null) names NCCL's last error message.
void check_nccl(ncclResult_t status, const char* what, ncclComm_t comm = nullptr);

// NCCL's name for a tensor dtype.
inline ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp32:
      break;
  }
  return ncclFloat32;
}

}  // namespace asynctp::nccl
