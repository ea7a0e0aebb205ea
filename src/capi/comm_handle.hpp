// What an asynctpComm_t points to: the C++ communicator and, where the C
// layer made the NCCL communicator under it, the ncclComm_t it must destroy
// after it.
#pragma once

#include <memory>

#include "asynctp/c_api.h"
#include "asynctp/comm.hpp"

struct asynctpComm {
  std::unique_ptr<asynctp::Comm> comm;
  // Destroys what the C layer owns beneath `comm` (an ncclComm_t); runs after
  // `comm` is gone. Empty when nothing is owned.
  void (*destroy_owned)(void*) = nullptr;
  void* owned = nullptr;

  ~asynctpComm() {
    comm.reset();
    if (destroy_owned) destroy_owned(owned);
  }
};

namespace asynctp::capi {

// The communicator behind a handle; throws Error(invalid_argument) naming
// `what` when the handle is NULL.
Comm& comm_of(asynctpComm_t handle, const char* what = "comm");

// Throws Error(invalid_argument) naming `what` when `pointer` is NULL.
void require_pointer(const void* pointer, const char* what);

}  // namespace asynctp::capi
