// Who this process is in a multi-process job, as the usual launchers say it
// in the environment: torchrun (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI's
// mpirun (OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK), MPICH/Hydra (PMI_RANK,
// PMI_SIZE, MPI_LOCALRANKID) and Slurm's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID); plus where rank 0's rendezvous listens: on MASTER_ADDR (as
// torchrun sets it; mpirun and srun users export it), at a port of its own.
//
// The port: ASYNCTP_RENDEZVOUS_PORT, or by default the one after MASTER_PORT.
// Never MASTER_PORT itself: torchrun's agent (TORCHELASTIC_USE_AGENT_STORE)
// or the job's own init_process_group(env://) serves PyTorch's TCPStore
// there for the whole job, so a rendezvous on it cannot bind. MASTER_PORT + 1
// because every rank derives it alone, before any channel exists, from a
// variable every launcher path already has, and nothing of torchrun's or
// PyTorch's listens there (their one fixed port is MASTER_PORT; NCCL and Gloo
// listen on ephemeral ports). What can still hold it is another job on the
// same host whose MASTER_PORT is ours + 1: rank 0 then fails at once naming
// the port and ASYNCTP_RENDEZVOUS_PORT, which chooses another. The rendezvous
// holds its port only while a communicator is being made.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"

namespace asynctp::bootstrap {

struct LaunchInfo {
  std::string launcher;  // which variables said it: "torchrun", "mpirun (Open MPI)", ...
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // this process's index on its node (picks the GPU)
  std::string master_addr;
  int master_port = 0;      // 0 when MASTER_PORT is not set (ASYNCTP_RENDEZVOUS_PORT is)
  int rendezvous_port = 0;  // where rank 0's rendezvous listens
  // Where rendezvous_port came from, for messages: "ASYNCTP_RENDEZVOUS_PORT",
  // "MASTER_PORT + 1" (or "MASTER_PORT - 1" for 65535).
  std::string rendezvous_port_source;
};

inline constexpr const char* kRendezvousPortVariable = "ASYNCTP_RENDEZVOUS_PORT";

// The default rendezvous port for `master_port` (in [1, 65535]): the next
// port, or the one before for 65535. Every rank computes the same.
int default_rendezvous_port(int master_port);

// "port 29501 (MASTER_PORT + 1)" or "port 7000 (ASYNCTP_RENDEZVOUS_PORT)".
std::string describe_rendezvous_port(const LaunchInfo& info);

// nullopt when no launcher's rank and size variables are set (a single
// process). Throws Error(invalid_argument) naming the variable and its rule:
// a rank outside [0, size), a size < 1, a launcher's rank or size set
// without the other, two launchers that disagree, a missing MASTER_ADDR, a
// malformed MASTER_PORT or ASYNCTP_RENDEZVOUS_PORT, neither of them set with
// several ranks, a rendezvous port equal to MASTER_PORT. Reads only through
// `env`.
std::optional<LaunchInfo> launch_info_from_env(const core::EnvLookup& env = core::process_env);

// launch_info_from_env for a communicator that needs a launcher: without
// its variables, Error(invalid_argument) naming the variables looked for.
LaunchInfo launched_process_info(const core::EnvLookup& env = core::process_env);

}  // namespace asynctp::bootstrap
