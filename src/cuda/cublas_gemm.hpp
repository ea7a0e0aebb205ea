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

class CublasGemm final : public gpu::LibraryGemm {
 public:
  CublasGemm() = default;
  ~CublasGemm() override;
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // The handle gets its own workspace, so that the call can be captured in
  // a CUDA graph.
  void run(cudaStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
           void* c) override;
  bool ready() const noexcept override { return handle_ != nullptr; }

 private:
  cublasHandle_t handle_ = nullptr;
  gpu::DeviceMemory workspace_;
};

}  // namespace asynctp::cuda
