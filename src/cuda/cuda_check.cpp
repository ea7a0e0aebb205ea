#include "cuda/cuda_check.hpp"

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::cuda {

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so later calls start clean
  throw Error(ErrorCode::backend, std::string("CUDA ") + what + ": " + cudaGetErrorName(status) +
                                      " (" + cudaGetErrorString(status) + ")");
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::backend, std::string("cuBLAS ") + what + ": " +
                                      cublasGetStatusName(status) + " (" +
                                      cublasGetStatusString(status) + ")");
}

}  // namespace asynctp::cuda
