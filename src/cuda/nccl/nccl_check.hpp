// NCCL statuses as asynctp errors.
#pragma once

#include <nccl.h>

#include "asynctp/tensor.hpp"
#include "core/lookup.hpp"

namespace asynctp::nccl {

// Throws Error(backend) "NCCL <what>: <error string> (<last error>)" unless
// ncclSuccess. `comm` (may be null) names NCCL's last error message.
void check_nccl(ncclResult_t status, const char* what, ncclComm_t comm = nullptr);

// NCCL's name for a tensor dtype.
inline ncclDataType_t nccl_type(DType dtype) {
  constexpr core::Entry<DType, ncclDataType_t> kTypes[] = {
      {DType::bf16, ncclBfloat16}, {DType::fp16, ncclFloat16}, {DType::fp32, ncclFloat32}};
  return core::lookup(kTypes, dtype, ncclFloat32);
}

}  // namespace asynctp::nccl
