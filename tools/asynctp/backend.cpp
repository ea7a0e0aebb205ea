// Which backend a run gets, and what this binary was built with: the latter
// answered once from the macros the library defines for its users
// (ASYNCTP_HAVE_CUDA_BACKEND, ..._HIP_..., ..._NCCL_BACKEND), the only #if of
// the tool; what a binary lacks is an error that says how to build it.
#include "backend.hpp"

#include <functional>

#include "asynctp/error.hpp"
#include "commands.hpp"

#if defined(ASYNCTP_HAVE_CUDA_BACKEND) || defined(ASYNCTP_HAVE_HIP_BACKEND)
#define ASYNCTP_CLI_GPU 1
#include "asynctp/loopback.hpp"
#endif
#if defined(ASYNCTP_HAVE_NCCL_BACKEND)
#include "asynctp/nccl.hpp"
#endif

namespace asynctp::tool {
namespace {

[[maybe_unused]] constexpr const char* kNoGpu =
    "this binary was built without the CUDA backend; rebuild with a CUDA toolkit and the "
    "CUTLASS headers (scripts/setup-deps, then cmake -DASYNCTP_CUDA=ON), or for AMD GPUs with "
    "ROCm 6+ and ASYNCTP_ROCM_ARCH=gfx942 or gfx950";
[[maybe_unused]] constexpr const char* kNoNccl =
    "this binary was built without the NCCL transport (it needs the CUDA backend and NCCL 2.28 "
    "or newer with nccl_device.h when CMake runs)";

// Why this binary cannot run the GPU backend `wanted` at all ("" when it has it).
std::string not_built(const std::string& wanted) {
  const std::string have = gpu_runtime();
  if (have == wanted) return "";
  if (have.empty()) return gpu_unavailable_reason(0);
  if (wanted == "hip") {
    return "this binary was built without the HIP backend (its GPU backend is " + have +
           "); a ROCm build (ROCm 6+, ASYNCTP_ROCM_ARCH=gfx942 or gfx950) has it";
  }
  return "this binary was built without the CUDA backend (its GPU backend is " + have +
         ", a ROCm build)";
}

std::unique_ptr<Backend> gpu_backend(const Args& args, const std::string& wanted) {
  if (const std::string why = not_built(wanted); !why.empty()) {
    fail("--backend", wanted + ": " + why);
  }
  if (const std::string why = gpu_unavailable_reason(args.device_or_default()); !why.empty()) {
    throw Error(ErrorCode::backend, "--backend " + wanted + ": no usable GPU at --device " +
                                        std::to_string(args.device_or_default()) + ": " + why);
  }
  if (args.workers_given) {
    fail("--workers", "only with the cpu backend (--backend auto chose " + wanted + ")");
  }
  if (launch_info()) {
    if (args.device) fail("--device", "not under a launcher: LOCAL_RANK picks each rank's GPU");
    return make_launched_backend(args);
  }
  if (gpu_link_for(args) != LinkChoice::nccl) return make_loopback_backend(args);
  if (args.device) {
    fail("--device",
         "only with the loopback links (pcie, arrival): --link nccl runs rank r on GPU r");
  }
  if (const std::string why = nccl_unavailable_reason(args.world_size); !why.empty()) {
    throw Error(ErrorCode::backend, "--link nccl: " + why);
  }
  return make_nccl_backend(args);
}

}  // namespace

void adopt_launcher(Args& args) {
  const std::optional<LaunchInfo> launch = launch_info();
  if (!launch) return;
  // auto without a usable GPU runs on the cpu backend.
  const bool on_cpu = args.backend == BackendChoice::cpu ||
                      (args.backend == BackendChoice::automatic &&
                       !gpu_unavailable_reason(args.device_or_default()).empty());
  // A launched world of one on the cpu is one process: --world-size thread
  // ranks in it, as without a launcher.
  if (on_cpu && launch->world_size == 1) return;
  if (args.world_size_given && args.world_size != launch->world_size) {
    fail("--world-size", "this process is rank " + std::to_string(launch->rank) + " of " +
                             std::to_string(launch->world_size) + " (" + launch->launcher +
                             "); leave --world-size out or give the same number");
  }
  if (!on_cpu && args.link() && *args.link() != LinkChoice::nccl) {
    fail("--link", "one process per rank (" + launch->launcher + ") runs on real GPUs: nccl, not " +
                       to_string(*args.link()));
  }
  args.world_size = launch->world_size;
  if (args.m_global % args.world_size != 0) {
    fail("-m", "must be divisible by the launcher's world size (" +
                   std::to_string(args.world_size) + "), got " + std::to_string(args.m_global));
  }
  if (!args.seed_given) {
    // The same on every rank of the job, so all ranks draw the same inputs;
    // nine digits, like a seed from the clock.
    const std::string job = launch->master_addr + ":" + std::to_string(launch->master_port) + "/" +
                            std::to_string(launch->world_size);
    args.seed = std::hash<std::string>{}(job) % 1'000'000'000ull;
    args.seed_given = true;
  }
}

LinkChoice gpu_link_for(const Args& args) {
  if (args.link()) return *args.link();
  if (launch_info()) return LinkChoice::nccl;
  if (args.world_size > 1 && !args.device && nccl_unavailable_reason(args.world_size).empty()) {
    return LinkChoice::nccl;
  }
  return LinkChoice::pcie;
}

std::unique_ptr<Backend> make_backend(const Args& args) {
  switch (args.backend) {
    case BackendChoice::cuda:
      return gpu_backend(args, "cuda");
    case BackendChoice::hip:
      return gpu_backend(args, "hip");
    case BackendChoice::cpu:
      return make_cpu_backend(args);
    case BackendChoice::automatic:
      break;
  }
  const std::string why_not_gpu = gpu_unavailable_reason(args.device_or_default());
  if (why_not_gpu.empty()) return gpu_backend(args, gpu_runtime());
  // A GPU-only flag then has nothing to act on, and silently dropping it
  // would measure something else than was asked.
  if (const auto flag = args.first_gpu_only_flag()) {
    fail(*flag, "only with a GPU backend (cuda or hip), and --backend auto chose cpu because " +
                    why_not_gpu);
  }
  return make_cpu_backend(args);
}

const char* gpu_runtime() noexcept {
#if defined(ASYNCTP_HAVE_HIP_BACKEND)
  return "hip";
#elif defined(ASYNCTP_HAVE_CUDA_BACKEND)
  return "cuda";
#else
  return "";
#endif
}

#if defined(ASYNCTP_CLI_GPU)
std::string gpu_unavailable_reason(int device) { return loopback::unavailable_reason(device); }
#else
std::string gpu_unavailable_reason(int) { return kNoGpu; }

std::unique_ptr<Backend> make_loopback_backend(const Args&) {
  throw Error(ErrorCode::unsupported, std::string("--backend: ") + kNoGpu);
}
#endif

std::optional<LaunchInfo> launch_info() { return launch_info_from_environment(); }

#if defined(ASYNCTP_HAVE_NCCL_BACKEND)
std::string nccl_unavailable_reason(int world_size) { return nccl::unavailable_reason(world_size); }
#else
std::string nccl_unavailable_reason(int) { return kNoNccl; }

std::unique_ptr<Backend> make_nccl_backend(const Args&) {
  throw Error(ErrorCode::unsupported, std::string("--link nccl: ") + kNoNccl);
}

std::unique_ptr<Backend> make_launched_backend(const Args&) {
  throw Error(ErrorCode::unsupported, std::string("one rank per process: ") + kNoNccl);
}
#endif

// The benchmark's baseline is cuBLAS, so it is CUDA's alone so far.
#if !defined(ASYNCTP_HAVE_CUDA_BACKEND)
int bench_command(Args, const std::string&) {
  const std::string have = gpu_runtime();
  throw Error(ErrorCode::unsupported,
              "this binary was built without the CUDA backend (" +
                  (have.empty() ? std::string("no GPU backend") : "its GPU backend is " + have) +
                  "), which asynctp bench needs: its baseline is cuBLAS");
}
#endif

}  // namespace asynctp::tool
