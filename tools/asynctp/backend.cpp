#include "backend.hpp"

#include "asynctp/error.hpp"
#include "cpu_backend.hpp"
#include "flag_values.hpp"
#include "gpu_entry.hpp"
#include "nccl_entry.hpp"

namespace asynctp::tool {
namespace {

const char* name_of(BackendChoice choice) { return choice == BackendChoice::hip ? "hip" : "cuda"; }

// Why this binary cannot run the GPU backend `wanted` at all ("" when it has it).
std::string not_built(const std::string& wanted) {
  const std::string have = gpu_entry::runtime();
  if (have == wanted) return "";
  if (have.empty()) return gpu_entry::unavailable_reason(0);
  if (wanted == "hip") {
    return "this binary was built without the HIP backend (its GPU backend is " + have +
           "); a ROCm build (ROCm 6+, ASYNCTP_ROCM_ARCH=gfx942 or gfx950) has it";
  }
  return "this binary was built without the CUDA backend (its GPU backend is " + have +
         ", a ROCm build)";
}

std::unique_ptr<Backend> gpu_backend(const RunArgs& args, const std::string& wanted) {
  if (const std::string why = not_built(wanted); !why.empty())
    fail("--backend", wanted + ": " + why);
  if (const std::string why = gpu_entry::unavailable_reason(args.device_or_default());
      !why.empty()) {
    throw Error(ErrorCode::backend, "--backend " + wanted + ": no usable GPU at --device " +
                                        std::to_string(args.device_or_default()) + ": " + why);
  }
  if (args.workers_given) {
    fail("--workers", "only with the cpu backend (--backend auto chose " + wanted + ")");
  }
  if (nccl_entry::launch_from_env()) {
    if (args.device) {
      fail("--device", "not under a launcher: LOCAL_RANK picks each rank's GPU");
    }
    return nccl_entry::make_launched_backend(args);
  }
  if (gpu_link_for(args) == LinkChoice::nccl) {
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
  return gpu_entry::make_backend(args);
}

// auto falls back to cpu; a CUDA-only flag then has nothing to act on, and
// silently dropping it would measure something else than was asked.
std::unique_ptr<Backend> cpu_backend(const RunArgs& args, const std::string& why_not_gpu) {
  if (const auto flag = args.first_gpu_only_flag()) {
    fail(*flag, "only with a GPU backend (cuda or hip), and --backend auto chose cpu because " +
                    why_not_gpu);
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
      !gpu_entry::unavailable_reason(args.device_or_default()).empty()) {
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

LinkChoice gpu_link_for(const RunArgs& args) {
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
    case BackendChoice::hip:
      return gpu_backend(args, name_of(args.backend));
    case BackendChoice::cpu:
      return make_cpu_backend(args);
    case BackendChoice::automatic: {
      const std::string why = gpu_entry::unavailable_reason(args.device_or_default());
      return why.empty() ? gpu_backend(args, gpu_entry::runtime()) : cpu_backend(args, why);
    }
  }
  return nullptr;
}

}  // namespace asynctp::tool
