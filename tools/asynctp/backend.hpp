// The backend a run executes on. `--backend auto` takes the best one built
// into this binary; today that is cpu, and a GPU backend slots in here by
// implementing this interface (and allocating its buffers on its device).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "asynctp/comm.hpp"
#include "cli_args.hpp"

namespace asynctp::tool {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const noexcept = 0;
  virtual int world_size() const noexcept = 0;
  virtual int gemm_workers_per_rank() const noexcept = 0;
  virtual Comm& comm(int rank) = 0;
  // Runs body(comm) once per rank, concurrently, and joins; rethrows a rank's
  // exception.
  virtual void run(const std::function<void(Comm&)>& body) = 0;
};

// Throws asynctp::Error when the backend cannot start (e.g. a bad
// ASYNCTP_CPU_WORKERS).
std::unique_ptr<Backend> make_backend(const RunArgs& args);

}  // namespace asynctp::tool
