// The launcher's environment (torchrun, mpirun, srun, MASTER_ADDR/PORT,
// ASYNCTP_RENDEZVOUS_PORT), any values at all: a LaunchInfo that keeps its
// promises (rank in [0, size), a usable port with several ranks), nothing,
// or Error(invalid_argument); never a crash or an overflow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "asynctp/error.hpp"
#include "bootstrap/launch_env.hpp"
#include "fuzz_env.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> names = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID",
      "SLURM_NTASKS", "SLURM_LOCALID", "MASTER_ADDR", "MASTER_PORT", "ASYNCTP_RENDEZVOUS_PORT"};
  const asynctp_fuzz::FuzzEnv env(data, size, names);
  try {
    const auto info = asynctp::bootstrap::launch_info_from_env(env.lookup());
    if (!info) return 0;
    if (info->world_size < 1 || info->rank < 0 || info->rank >= info->world_size) std::abort();
    if (info->local_rank < 0) std::abort();
    if (info->world_size > 1) {
      if (info->master_addr.empty()) std::abort();
      if (info->rendezvous_port < 1 || info->rendezvous_port > 65535) std::abort();
      if (info->rendezvous_port == info->master_port) std::abort();
    }
    (void)asynctp::bootstrap::describe_rendezvous_port(*info);
  } catch (const asynctp::Error& e) {
    if (e.code() != asynctp::ErrorCode::invalid_argument) std::abort();
  }
  return 0;
}
