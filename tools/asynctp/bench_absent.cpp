// `asynctp bench` where this binary has no CUDA backend: the benchmark's
// baseline is cuBLAS, so it is CUDA's alone so far (a ROCm build, or no GPU
// backend at all, says so).
#include "asynctp/error.hpp"
#include "gpu_entry.hpp"

namespace asynctp::tool::gpu_entry {

int bench(BenchArgs, const std::string&) {
  const std::string have = runtime();
  throw Error(ErrorCode::unsupported,
              "this binary was built without the CUDA backend (" +
                  (have.empty() ? std::string("no GPU backend") : "its GPU backend is " + have) +
                  "), which asynctp bench needs: its baseline is cuBLAS");
}

}  // namespace asynctp::tool::gpu_entry
