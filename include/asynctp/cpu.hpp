// The CPU backend: W ranks as threads of one process (Group), or one rank
// per process of one host (make_process_comm, comm_from_environment), the
// workspace then in POSIX shared memory. It is the executable specification
// of the protocol (a producer thread per rank plays the copy engine, a
// persistent pool of GEMM workers plays the persistent CTAs) and the backend
// CI runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "asynctp/comm.hpp"
#include "asynctp/group.hpp"

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
class Group final : public RankGroup {
 public:
  // Throws Error if world_size < 1 or gemm_workers_per_rank < 0.
  explicit Group(const GroupConfig& config);
  ~Group() override;

  int world_size() const noexcept override;
  int gemm_workers_per_rank() const noexcept;
  Comm& comm(int rank) override;
  // run(body): RankGroup's, one thread per rank.

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Ranks as processes of one host. Each rank's registered copy of its A
// shard, its receive slots, the agreement records, the signals and a barrier
// live in POSIX shared memory that every rank maps while the group is made;
// the names are unlinked as soon as all have mapped them (and on every
// failure path before that), so nothing is left behind however a process
// ends. A peer process that dies makes the others fail naming its rank, not
// hang. Every wait is bounded (ASYNCTP_WAIT_TIMEOUT_MS within calls,
// setup_timeout_ms while the group is made).

// Opaque id of one multi-process group (like ncclUniqueId): one process
// makes it, the caller hands the bytes to the others (through
// torch.distributed, MPI, a file...). One id makes one group.
struct UniqueId {
  char bytes[128];
};
UniqueId make_unique_id();

struct ProcessOptions {
  int gemm_workers = 0;                     // as GroupConfig::gemm_workers_per_rank
  std::int64_t setup_timeout_ms = 120'000;  // bound on waiting for the peers at creation
};

// Collective: every rank 0..world_size-1 of the group calls it once with the
// same id, from its own process on this host. Throws Error(invalid_argument)
// naming the argument (an id not made by make_unique_id or already used, a
// world size or rank out of range, a world size other than rank 0's),
// Error(timeout) when peers do not come within setup_timeout_ms,
// Error(backend) when the shared memory cannot be had.
std::unique_ptr<Comm> make_process_comm(const UniqueId& id, int world_size, int rank,
                                        const ProcessOptions& options = {});

// Under torchrun / mpirun / srun (RANK, WORLD_SIZE as asynctp/launch.hpp
// reads them): rank 0 makes the id and hands it out through a TCP
// rendezvous on MASTER_ADDR, port ASYNCTP_RENDEZVOUS_PORT (default
// MASTER_PORT + 1), as nccl::comm_from_environment does. Every rank must be
// on one host. Throws Error(invalid_argument) without launcher variables.
std::unique_ptr<Comm> comm_from_environment(const ProcessOptions& options = {});

}  // namespace asynctp::cpu
