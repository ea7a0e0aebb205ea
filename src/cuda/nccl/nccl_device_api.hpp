// The NCCL entry points the transport needs beyond NCCL's core: symmetric
// memory (ncclMemAlloc, 2.19), windows (2.27) and the device communicator
// (2.28). They are referenced weakly, so that the library still loads in a
// process whose NCCL is older: PyTorch's wheels load the NCCL they bundle
// before this library, and a strong reference to a missing symbol would make
// the whole library (its CPU transport too) fail to load. Where they are
// missing, the NCCL transport refuses to start and says why
// (require_device_api). Include this header in every file that calls them.
#pragma once

#include <nccl.h>
#include <nccl_device.h>

#include <string>

#pragma weak ncclMemAlloc
#pragma weak ncclMemFree
#pragma weak ncclCommWindowRegister
#pragma weak ncclCommWindowDeregister
#pragma weak ncclDevCommCreate
#pragma weak ncclDevCommDestroy

namespace asynctp::nccl {

// The oldest NCCL (ncclGetVersion's code) whose device API this build uses.
inline constexpr int kMinNcclVersion = 22800;

// Why the NCCL of version code `version` (e.g. 22809 for 2.28.9) cannot run
// the transport, "" when it can; `entry_points` says whether the symbols
// above resolved in this process.
std::string device_api_problem(int version, bool entry_points);

// Throws Error(unsupported) naming the NCCL loaded in this process unless it
// can run the transport. Called before any NCCL communicator is made or
// wrapped, so every rank refuses alike and none waits on another.
void require_device_api();

}  // namespace asynctp::nccl
