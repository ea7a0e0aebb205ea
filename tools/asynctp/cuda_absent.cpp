// The CUDA doorway of a binary built without the CUDA backend (no nvcc or no
// CUTLASS headers when CMake ran, or ASYNCTP_CUDA=OFF): every entry says so.
#include "asynctp/error.hpp"
#include "cuda_entry.hpp"

namespace asynctp::tool::cuda_entry {
namespace {

constexpr const char* kNotBuilt =
    "this binary was built without the CUDA backend; rebuild with a CUDA toolkit and the "
    "CUTLASS headers (scripts/setup-deps, then cmake -DASYNCTP_CUDA=ON)";

}  // namespace

bool built() noexcept { return false; }

std::string unavailable_reason(int) { return kNotBuilt; }

std::unique_ptr<Backend> make_backend(const RunArgs&) {
  throw Error(ErrorCode::unsupported, std::string("--backend cuda: ") + kNotBuilt);
}

int bench(BenchArgs, const std::string&) {
  throw Error(ErrorCode::unsupported, std::string("needs the CUDA backend: ") + kNotBuilt);
}

}  // namespace asynctp::tool::cuda_entry
