// Who this process is in a multi-process job, as the usual launchers say it
// in the environment: torchrun (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI's
// mpirun (OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK), MPICH/Hydra (PMI_RANK,
// PMI_SIZE, MPI_LOCALRANKID) and Slurm's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID); plus where rank 0's rendezvous listens (MASTER_ADDR and
// MASTER_PORT, as torchrun sets them; mpirun and srun users export them).
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
  int master_port = 0;
};

// nullopt when no launcher's rank and size variables are set (a single
// process). Throws Error(invalid_argument) naming the variable and its rule:
// a rank outside [0, size), a size < 1, a launcher's rank or size set
// without the other, two launchers that disagree, a missing or malformed
// MASTER_ADDR / MASTER_PORT. Reads only through `env`.
std::optional<LaunchInfo> launch_info_from_env(const core::EnvLookup& env = core::process_env);

}  // namespace asynctp::bootstrap
