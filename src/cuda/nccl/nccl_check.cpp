#include "cuda/nccl/nccl_check.hpp"

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::nccl {

void check_nccl(ncclResult_t status, const char* what, ncclComm_t comm) {
  if (status == ncclSuccess) return;
  std::string message = std::string("NCCL ") + what + ": " + ncclGetErrorString(status);
  const char* last = ncclGetLastError(comm);
  if (last && *last) message += std::string(" (") + last + ")";
  throw Error(ErrorCode::backend, message);
}

}  // namespace asynctp::nccl
