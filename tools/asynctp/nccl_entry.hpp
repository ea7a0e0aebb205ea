// The CLI's doorway to the NCCL transport (ranks on real GPUs, --link nccl).
// nccl_backend.cpp implements it when the library has asynctp_nccl;
// nccl_absent.cpp otherwise. Chosen once in tools/CMakeLists.txt.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backend.hpp"
#include "cli_args.hpp"

namespace asynctp::tool::nccl_entry {

bool built() noexcept;

// "" when `world_size` local GPUs can each run one NCCL rank; otherwise why
// not (including "built without the NCCL transport").
std::string unavailable_reason(int world_size);

// One process, world_size GPUs (asynctp::nccl::LocalGroup). Throws
// asynctp::Error when that cannot be made.
std::unique_ptr<Backend> make_backend(const RunArgs& args);

// This process as a launcher (torchrun, mpirun, srun) started it: one rank
// of a job. nullopt when no launcher variables are set, or when the binary
// has no NCCL transport. Throws asynctp::Error on malformed variables.
struct Launch {
  std::string launcher;
  int rank = 0;
  int world_size = 1;
  // The same on every rank of the job (MASTER_ADDR, MASTER_PORT, WORLD_SIZE):
  // the seed when --seed is not given, so all ranks draw the same inputs.
  std::uint64_t job_seed = 0;
};
std::optional<Launch> launch_from_env();

// This process's one rank (asynctp::nccl::comm_from_environment).
std::unique_ptr<Backend> make_launched_backend(const RunArgs& args);

}  // namespace asynctp::tool::nccl_entry
