// A communicator: one rank's handle on a group of ranks that call collective
// operations together. Every rank of the group must make the same sequence of
// collective calls with agreeing arguments; asynctp checks the agreement and
// reports a mismatch on every rank rather than hanging.
#pragma once

#include <memory>
#include <string>

#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const noexcept = 0;
  virtual int world_size() const noexcept = 0;
  virtual DeviceKind device_kind() const noexcept = 0;
  virtual const char* backend_name() const noexcept = 0;

  // The operations are the free functions of asynctp/ops.hpp; communicators
  // are made by the library's groups and factories (asynctp/cpu.hpp,
  // loopback.hpp, nccl.hpp), which bring what every op runs on.
  // Waits (bounded by the wait timeout) until the device work of every call
  // this rank enqueued has finished, then throws the first error found only
  // on the device (e.g. a chunk that never arrived). Synchronous backends
  // (cpu) have nothing to wait for.
  virtual void synchronize() {}
};

}  // namespace asynctp
