#include "hip/hipblas_gemm.hpp"

#include "asynctp/error.hpp"

#if defined(ASYNCTP_HAVE_HIPBLAS)
#include "core/lookup.hpp"
#endif

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

}  // namespace

HipblasGemm::~HipblasGemm() {
  if (handle_) (void)hipblasDestroy(handle_);
}

void HipblasGemm::prepare() {
  if (!handle_) check_hipblas(hipblasCreate(&handle_), "hipblasCreate");
}

void HipblasGemm::run(hipStream_t stream, const void* a, std::int64_t rows, const TensorView& b,
                      void* c) {
  prepare();
  check_hipblas(hipblasSetStream(handle_, stream), "hipblasSetStream");
  const gpu::ColumnMajorGemm g = gpu::column_major_gemm(rows, b);
  constexpr core::Entry<DType, hipblasDatatype_t> kDataTypes[] = {
      {DType::bf16, HIPBLAS_R_16B}, {DType::fp16, HIPBLAS_R_16F}, {DType::fp32, HIPBLAS_R_32F}};
  const float alpha = 1.0f, beta = 0.0f;
  const hipblasDatatype_t type = core::lookup(kDataTypes, b.dtype, HIPBLAS_R_32F);
  check_hipblas(hipblasGemmEx(handle_, g.transpose_b ? HIPBLAS_OP_T : HIPBLAS_OP_N, HIPBLAS_OP_N,
                              g.n, g.rows, g.k, &alpha, b.data, type, g.ldb, a, type, g.k, &beta, c,
                              type, g.n, HIPBLAS_R_32F, HIPBLAS_GEMM_DEFAULT),
                "hipblasGemmEx");
}
#endif

}  // namespace asynctp::hip
