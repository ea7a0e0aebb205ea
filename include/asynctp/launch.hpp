// Who this process is in a job that a launcher started, one process per
// rank: torchrun (RANK, WORLD_SIZE, LOCAL_RANK), mpirun (Open MPI, MPICH),
// srun (Slurm), and where rank 0's rendezvous listens (MASTER_ADDR,
// MASTER_PORT). It is what nccl::comm_from_environment reads, available
// before any communicator exists, so that a program can size its tensors or
// refuse a configuration without joining the rendezvous.
#pragma once

#include <optional>
#include <string>

namespace asynctp {

struct LaunchInfo {
  std::string launcher;  // which variables said it: "torchrun", "srun (Slurm)", ...
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // this process's index on its node (picks its GPU)
  std::string master_addr;
  int master_port = 0;
};

// nullopt when no launcher's variables are set (a single process). Throws
// Error(invalid_argument) naming the variable and its rule when they are
// malformed or contradict each other.
std::optional<LaunchInfo> launch_info_from_environment();

}  // namespace asynctp
