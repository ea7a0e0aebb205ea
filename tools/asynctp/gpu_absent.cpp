// The GPU doorway of a binary built without a GPU backend (no nvcc or no
// CUTLASS headers when CMake ran, ASYNCTP_CUDA=OFF, and no ROCm build):
// every entry says so.
#include "asynctp/error.hpp"
#include "gpu_entry.hpp"

namespace asynctp::tool::gpu_entry {
namespace {

constexpr const char* kNotBuilt =
    "this binary was built without the CUDA backend; rebuild with a CUDA toolkit and the "
    "CUTLASS headers (scripts/setup-deps, then cmake -DASYNCTP_CUDA=ON), or for AMD GPUs with "
    "ROCm 6+ and ASYNCTP_ROCM_ARCH=gfx942 or gfx950";

}  // namespace

const char* runtime() noexcept { return ""; }

std::string unavailable_reason(int) { return kNotBuilt; }

std::unique_ptr<Backend> make_backend(const RunArgs&) {
  throw Error(ErrorCode::unsupported, std::string("--backend: ") + kNotBuilt);
}

}  // namespace asynctp::tool::gpu_entry
