#include "cuda/cublas_gemm.hpp"

#include "asynctp/error.hpp"
#include "cuda/cuda_check.hpp"

namespace asynctp::cuda {
namespace {

// cuBLAS's recommended workspace for Hopper; given explicitly so that no
// allocation happens inside a graph capture.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::fp16:
      return CUDA_R_16F;
    case DType::fp32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

}  // namespace

CublasGemm::~CublasGemm() {
  if (handle_) (void)cublasDestroy(handle_);
}

void CublasGemm::run(cudaStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
                     void* c) {
  if (!handle_) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    void* ws = workspace_.ensure(kWorkspaceBytes, "cuBLAS workspace allocation");
    check_cublas(cublasSetWorkspace(handle_, ws, kWorkspaceBytes), "cublasSetWorkspace");
  }
  check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  // cuBLAS is column-major: a row-major X is X^T in its eyes. So compute
  // C^T (n x rows) = B^T (n x k) @ A^T (k x rows). Row-major B is B^T
  // column-major (ld n, no transpose); column-major B needs op T (ld k).
  const int n = static_cast<int>(b.cols);
  const int k = static_cast<int>(b.rows);
  const int m = static_cast<int>(rows);
  const bool b_row_major = b.is_row_major();
  const cublasOperation_t op_b = b_row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int ldb = b_row_major ? n : k;
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t type = data_type(b.dtype);
  check_cublas(cublasGemmEx(handle_, op_b, CUBLAS_OP_N, n, m, k, &alpha, b.data, type, ldb, a, type,
                            k, &beta, c, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace asynctp::cuda
