// The NCCL doorway of a binary built without the NCCL transport (no CUDA
// backend, or no NCCL 2.28+ with its device API when CMake ran).
#include "asynctp/error.hpp"
#include "nccl_entry.hpp"

namespace asynctp::tool::nccl_entry {
namespace {

constexpr const char* kNotBuilt =
    "this binary was built without the NCCL transport (it needs the CUDA backend and NCCL 2.28 "
    "or newer with nccl_device.h when CMake runs)";

}  // namespace

bool built() noexcept { return false; }

std::string unavailable_reason(int) { return kNotBuilt; }

std::unique_ptr<Backend> make_backend(const RunArgs&) {
  throw Error(ErrorCode::unsupported, std::string("--link nccl: ") + kNotBuilt);
}

std::optional<Launch> launch_from_env() { return std::nullopt; }

std::unique_ptr<Backend> make_launched_backend(const RunArgs&) {
  throw Error(ErrorCode::unsupported, std::string("one rank per process: ") + kNotBuilt);
}

}  // namespace asynctp::tool::nccl_entry
