// Dense math of the CPU backend: a block of output rows computed by OpenBLAS
// in fp32 (the accumulation precision), with A widened from the storage dtype
// block by block and C rounded back to it.
#pragma once

#include <cstdint>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::cpu {

// Per-thread buffers reused across blocks and calls.
struct GemmScratch {
  std::vector<float> a;
  std::vector<float> c;
};

// c_out[rows, cols] = gathered[rows, :] @ b32[:, cols] for rows
// [row_begin, row_end) and cols [col_begin, col_end); b32 is row-major k x n.
void gemm_rows(const TensorView& gathered, const float* b32, const TensorView& c_out,
               std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
               std::int64_t col_end, GemmScratch& scratch);

// Widens b (any layout and storage dtype) into row-major fp32.
void widen_b(const TensorView& b, std::vector<float>& out);

// Called once per process: OpenBLAS must not spawn its own threads, since
// every rank and worker already calls it concurrently.
void configure_blas_threads();

}  // namespace asynctp::cpu
