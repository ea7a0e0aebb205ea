// NCCL statuses as asynctp errors.
#pragma once

#include <nccl.h>

namespace asynctp::nccl {

// Throws Error(backend) "NCCL <what>: <error string> (<last error>)" unless
// ncclSuccess. `comm` (may be null) names NCCL's last error message.
void check_nccl(ncclResult_t status, const char* what, ncclComm_t comm = nullptr);

}  // namespace asynctp::nccl
