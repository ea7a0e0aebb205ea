// comm_from_environment (asynctp/nccl.hpp) once the launcher's variables are
// read: the rendezvous, the one-GPU-per-rank check and ncclCommInitRank.
// Separate so that tests can play several ranks of one job in one process.
#pragma once

#include <memory>

#include "asynctp/comm.hpp"
#include "asynctp/nccl.hpp"
#include "bootstrap/launch_env.hpp"

namespace asynctp::nccl {

std::unique_ptr<Comm> comm_from_launch_info(const bootstrap::LaunchInfo& info,
                                            const EnvironmentOptions& options);

}  // namespace asynctp::nccl
