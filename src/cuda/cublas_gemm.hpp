// The CUDA backend's library GEMM (gpu/library_gemm.hpp): cuBLAS on
// row-major operands, C[rows] = A[rows] @ B with fp32 accumulation.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "asynctp/tensor.hpp"
#include "gpu/library_gemm.hpp"
#include "gpu/resources.hpp"

namespace asynctp::cuda {

class CublasGemm final : public gpu::HandleGemm<cublasHandle_t> {
 public:
  ~CublasGemm() override;

  // The handle gets its own workspace, so that the call can be captured in
  // a CUDA graph.
  void prepare() override;
  void run(cudaStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
           void* c) override;

 private:
  gpu::DeviceMemory workspace_;
};

}  // namespace asynctp::cuda
