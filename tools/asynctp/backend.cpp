#include "backend.hpp"

#include "asynctp/error.hpp"
#include "cpu_backend.hpp"
#include "cuda_entry.hpp"
#include "flag_values.hpp"
#include "nccl_entry.hpp"

namespace asynctp::tool {
namespace {

std::unique_ptr<Backend> cuda_backend(const RunArgs& args) {
  if (!cuda_entry::built()) {
    fail("--backend", "cuda: " + cuda_entry::unavailable_reason(args.device_or_default()));
  }
  if (const std::string why = cuda_entry::unavailable_reason(args.device_or_default());
      !why.empty()) {
    throw Error(ErrorCode::backend, "--backend cuda: no usable GPU at --device " +
                                        std::to_string(args.device_or_default()) + ": " + why);
  }
  if (args.workers_given) {
    fail("--workers", "only with the cpu backend (--backend auto chose cuda)");
  }
  if (nccl_entry::launch_from_env()) {
    if (args.device) {
      fail("--device", "not under a launcher: LOCAL_RANK picks each rank's GPU");
    }
    return nccl_entry::make_launched_backend(args);
  }
  if (cuda_link_for(args) == LinkChoice::nccl) {
    if (args.device) {
      fail("--device",
           "only with the loopback links (pcie, arrival): --link nccl runs rank r on "
           "GPU r");
    }
    if (const std::string why = nccl_entry::unavailable_reason(args.world_size); !why.empty()) {
      throw Error(ErrorCode::backend, "--link nccl: " + why);
    }
    return nccl_entry::make_backend(args);
  }
  return cuda_entry::make_backend(args);
}

// auto falls back to cpu; a CUDA-only flag then has nothing to act on, and
// silently dropping it would measure something else than was asked.
std::unique_ptr<Backend> cpu_backend(const RunArgs& args, const std::string& why_not_cuda) {
  if (const auto flag = args.first_cuda_only_flag()) {
    fail(*flag, "only with the cuda backend, and --backend auto chose cpu because " + why_not_cuda);
  }
  return make_cpu_backend(args);
}

}  // namespace

int first_held_rank(const Backend& backend) {
  for (int r = 0; r < backend.world_size(); ++r) {
    if (backend.holds(r)) return r;
  }
  return 0;
}

bool adopt_launcher(RunArgs& args) {
  if (args.backend == BackendChoice::cpu) return false;
  const auto launch = nccl_entry::launch_from_env();
  if (!launch) return false;
  // auto without a usable GPU runs on the cpu backend, launcher or not.
  if (args.backend == BackendChoice::automatic &&
      !cuda_entry::unavailable_reason(args.device_or_default()).empty()) {
    return false;
  }
  if (args.world_size_given && args.world_size != launch->world_size) {
    fail("--world-size", "this process is rank " + std::to_string(launch->rank) + " of " +
                             std::to_string(launch->world_size) + " (" + launch->launcher +
                             "); leave --world-size out or give the same number");
  }
  if (args.link && *args.link != LinkChoice::nccl) {
    fail("--link", "one process per rank (" + launch->launcher + ") runs on real GPUs: nccl, not " +
                       to_string(*args.link));
  }
  args.world_size = launch->world_size;
  if (args.m_global % args.world_size != 0) {
    fail("-m", "must be divisible by the launcher's world size (" +
                   std::to_string(args.world_size) + "), got " + std::to_string(args.m_global));
  }
  if (!args.seed_given) {
    args.seed = launch->job_seed;
    args.seed_given = true;
  }
  return true;
}

LinkChoice cuda_link_for(const RunArgs& args) {
  if (args.link) return *args.link;
  if (nccl_entry::launch_from_env()) return LinkChoice::nccl;
  if (args.world_size > 1 && !args.device &&
      nccl_entry::unavailable_reason(args.world_size).empty()) {
    return LinkChoice::nccl;
  }
  return LinkChoice::pcie;
}

std::unique_ptr<Backend> make_backend(const RunArgs& args) {
  switch (args.backend) {
    case BackendChoice::cuda:
      return cuda_backend(args);
    case BackendChoice::cpu:
      return make_cpu_backend(args);
    case BackendChoice::automatic: {
      const std::string why = cuda_entry::unavailable_reason(args.device_or_default());
      return why.empty() ? cuda_backend(args) : cpu_backend(args, why);
    }
  }
  return nullptr;
}

}  // namespace asynctp::tool
