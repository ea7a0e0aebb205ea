// The library GEMM of the pipelined and decomposed paths: cuBLAS on row-major
// operands, C[rows] = A[rows] @ B with fp32 accumulation.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "asynctp/tensor.hpp"
#include "gpu/resources.hpp"

namespace asynctp::cuda {

class CublasGemm {
 public:
  CublasGemm() = default;
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // c (rows x b.cols, row-major, ld = b.cols) = a (rows x b.rows, row-major,
  // ld = b.rows) @ b (row- or column-major), enqueued on `stream`. The
  // handle is made on first use on the current device, with its own
  // workspace so that the call can be captured in a CUDA graph.
  void run(cudaStream_t stream, const void* a, std::int64_t rows, const TensorView& b, void* c);
  // Whether the handle exists (making it is not allowed inside a graph capture).
  bool ready() const noexcept { return handle_ != nullptr; }

 private:
  cublasHandle_t handle_ = nullptr;
  gpu::DeviceMemory workspace_;
};

}  // namespace asynctp::cuda
