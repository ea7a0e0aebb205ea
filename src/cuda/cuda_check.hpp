// CUDA runtime and cuBLAS statuses as asynctp errors.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace asynctp::cuda {

// Throws Error(backend) "CUDA <what>: <name> (<description>)" unless ok
// (check_cuda is gpu::check, for the CUDA-only code that names cudaError_t).
void check_cuda(cudaError_t status, const char* what);
void check_cublas(cublasStatus_t status, const char* what);

}  // namespace asynctp::cuda
