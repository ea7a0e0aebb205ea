#include "hip/hipblas_gemm.hpp"

#include "asynctp/error.hpp"

namespace asynctp::hip {

std::string library_gemm_unavailable_reason() {
#if defined(ASYNCTP_HAVE_HIPBLAS)
  return "";
#else
  return "this build has no hipBLAS (not found at build time; ROCm's hipblas package provides "
         "it); only native runs";
#endif
}

#if defined(ASYNCTP_HAVE_HIPBLAS)
namespace {

void check_hipblas(hipblasStatus_t status, const char* what) {
  if (status != HIPBLAS_STATUS_SUCCESS) {
    throw Error(ErrorCode::backend, std::string("hipBLAS ") + what + " failed with status " +
                                        std::to_string(static_cast<int>(status)));
  }
}

hipblasDatatype_t data_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return HIPBLAS_R_16B;
    case DType::fp16:
      return HIPBLAS_R_16F;
    case DType::fp32:
      return HIPBLAS_R_32F;
  }
  return HIPBLAS_R_32F;
}

}  // namespace

HipblasGemm::~HipblasGemm() {
  if (handle_) (void)hipblasDestroy(handle_);
}

void HipblasGemm::run(hipStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
                      void* c) {
  if (!handle_) check_hipblas(hipblasCreate(&handle_), "hipblasCreate");
  check_hipblas(hipblasSetStream(handle_, stream), "hipblasSetStream");
  // Column-major library: C^T (n x rows) = B^T (n x k) @ A^T (k x rows).
  const int n = static_cast<int>(b.cols), k = static_cast<int>(b.rows);
  const bool b_row_major = b.is_row_major();
  const float alpha = 1.0f, beta = 0.0f;
  const hipblasDatatype_t type = data_type(b.dtype);
  check_hipblas(hipblasGemmEx(handle_, b_row_major ? HIPBLAS_OP_N : HIPBLAS_OP_T, HIPBLAS_OP_N, n,
                              static_cast<int>(rows), k, &alpha, b.data, type, b_row_major ? n : k,
                              a, type, k, &beta, c, type, n, HIPBLAS_R_32F, HIPBLAS_GEMM_DEFAULT),
                "hipblasGemmEx");
}
#endif

}  // namespace asynctp::hip
