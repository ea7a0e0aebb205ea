#include "cuda/nccl/nccl_device_api.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "cuda/nccl/nccl_check.hpp"

namespace asynctp::nccl {

namespace {

std::string version_name(int code) {
  // NCCL's code since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace

std::string device_api_problem(int version, bool entry_points) {
  if (version >= kMinNcclVersion && entry_points) return "";
  return "the NCCL loaded in this process is " + version_name(version) +
         (entry_points ? "" : " and lacks the device API's entry points") +
         "; asynctp's NCCL transport needs NCCL " + version_name(kMinNcclVersion) +
         " or newer (symmetric memory windows and the device communicator). A PyTorch wheel "
         "loads the NCCL it bundles before asynctp: use one that bundles NCCL " +
         version_name(kMinNcclVersion) + "+, or the CPU transport";
}

void require_device_api() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  const bool entry_points = ncclMemAlloc != nullptr && ncclMemFree != nullptr &&
                            ncclCommWindowRegister != nullptr &&
                            ncclCommWindowDeregister != nullptr &&
                            ncclDevCommCreate != nullptr && ncclDevCommDestroy != nullptr;
  if (std::string why = device_api_problem(version, entry_points); !why.empty()) {
    throw Error(ErrorCode::unsupported, why);
  }
}

}  // namespace asynctp::nccl
