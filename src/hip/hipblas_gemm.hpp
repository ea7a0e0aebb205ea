// The HIP backend's library GEMM (gpu/library_gemm.hpp): hipBLAS, where it
// was found at build time (ASYNCTP_HAVE_HIPBLAS). Debian 12 has no hipBLAS,
// so CI builds without it: there the class is not declared, and
// library_gemm_unavailable_reason says why pipelined and decomposed cannot
// run (the planner then offers native only).
#pragma once

#include <string>

#if defined(ASYNCTP_HAVE_HIPBLAS)
#include <hipblas/hipblas.h>

#include <cstdint>

#include "gpu/library_gemm.hpp"
#endif

namespace asynctp::hip {

// "" when this build has hipBLAS, else why pipelined and decomposed cannot run.
std::string library_gemm_unavailable_reason();

#if defined(ASYNCTP_HAVE_HIPBLAS)
// Never compiled in CI. The row-major product as the column-major
// C^T = B^T A^T, as the CUDA backend's cuBLAS GEMM does.
class HipblasGemm final : public gpu::HandleGemm<hipblasHandle_t> {
 public:
  ~HipblasGemm() override;

  void prepare() override;
  void run(hipStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
           void* c) override;
};
#endif

}  // namespace asynctp::hip
