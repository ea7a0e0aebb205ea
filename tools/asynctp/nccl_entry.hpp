// The CLI's doorway to the NCCL transport (ranks on real GPUs, --link nccl).
// nccl_backend.cpp implements it when the library has asynctp_nccl;
// nccl_absent.cpp otherwise. Chosen once in tools/CMakeLists.txt.
#pragma once

#include <memory>
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

}  // namespace asynctp::tool::nccl_entry
