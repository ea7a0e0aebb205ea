// The CPU backend: W ranks as threads of one process. It is the executable
// specification of the protocol (a producer thread per rank plays the copy
// engine, a persistent pool of GEMM workers plays the persistent CTAs) and the
// backend CI runs.
#pragma once

#include <functional>
#include <memory>

#include "asynctp/comm.hpp"

namespace asynctp::cpu {

struct GroupConfig {
  int world_size = 1;
  // GEMM workers per rank (the persistent pool); 0 = ASYNCTP_CPU_WORKERS, else
  // hardware threads / world_size, at least 2 (pipelined uses two lanes).
  int gemm_workers_per_rank = 0;
};

// The backend calls OpenBLAS from many threads at once and so sets OpenBLAS
// to one thread (openblas_set_num_threads(1)) for the whole process when the
// first Group is made: parallelism comes from the ranks and their workers.
class Group {
 public:
  // Throws Error if world_size < 1 or gemm_workers_per_rank < 0.
  explicit Group(const GroupConfig& config);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int world_size() const noexcept;
  int gemm_workers_per_rank() const noexcept;
  Comm& comm(int rank);

  // Runs body(comm) on one thread per rank and joins them. If any rank throws,
  // rethrows the exception of the lowest failing rank after all have joined.
  void run(const std::function<void(Comm&)>& body);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace asynctp::cpu
