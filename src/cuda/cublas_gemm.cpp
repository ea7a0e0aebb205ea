#include "cuda/cublas_gemm.hpp"

#include "asynctp/error.hpp"
#include "core/lookup.hpp"
#include "cuda/cuda_check.hpp"

namespace asynctp::cuda {
namespace {

// cuBLAS's recommended workspace for Hopper; given explicitly so that no
// allocation happens inside a graph capture.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

}  // namespace

CublasGemm::~CublasGemm() {
  if (handle_) (void)cublasDestroy(handle_);
}

void CublasGemm::prepare() {
  if (!handle_) {
    check_cublas(cublasCreate(&handle_), "cublasCreate");
    void* ws = workspace_.ensure(kWorkspaceBytes, "cuBLAS workspace allocation");
    check_cublas(cublasSetWorkspace(handle_, ws, kWorkspaceBytes), "cublasSetWorkspace");
    // fp32 accumulation end to end: by default cuBLAS may add the split-K
    // pieces of an fp16/bf16 GEMM in the output's precision, which the ops'
    // error bounds do not allow (partials in fp32, rounded once; the
    // reduce-scatter's elementwise bound caught it on small chunks).
    check_cublas(cublasSetMathMode(handle_, static_cast<cublasMath_t>(
                                                CUBLAS_DEFAULT_MATH |
                                                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                 "cublasSetMathMode");
  }
}

void CublasGemm::run(cudaStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
                     void* c) {
  prepare();
  check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  const gpu::ColumnMajorGemm g = gpu::column_major_gemm(rows, b);
  constexpr core::Entry<DType, cudaDataType_t> kDataTypes[] = {
      {DType::bf16, CUDA_R_16BF}, {DType::fp16, CUDA_R_16F}, {DType::fp32, CUDA_R_32F}};
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t type = core::lookup(kDataTypes, b.dtype, CUDA_R_32F);
  check_cublas(cublasGemmEx(handle_, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, g.n,
                            g.rows, g.k, &alpha, b.data, type, g.ldb, a, type, g.k, &beta, c, type,
                            g.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace asynctp::cuda
