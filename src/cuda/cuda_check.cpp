#include "cuda/cuda_check.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"

namespace asynctp::cuda {

// The runtime layer's check, which names CUDA in a CUDA build.
void check_cuda(cudaError_t status, const char* what) { gpu::check(status, what); }

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::backend, std::string("cuBLAS ") + what + ": " +
                                      cublasGetStatusName(status) + " (" +
                                      cublasGetStatusString(status) + ")");
}

}  // namespace asynctp::cuda
