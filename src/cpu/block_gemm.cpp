#include "cpu/block_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "core/dtype_convert.hpp"

namespace asynctp::cpu {
namespace {

// Rows widened at a time: bounds scratch memory at kRowBlock * k floats.
constexpr std::int64_t kRowBlock = 256;

}  // namespace

void configure_blas_threads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void widen_b(const TensorView& b, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(b.rows * b.cols));
  core::rows_to_float(b, 0, b.rows, out.data());
}

void gemm_rows(const TensorView& gathered, const float* b32, const TensorView& c_out,
               std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
               std::int64_t col_end, GemmScratch& scratch) {
  const std::int64_t k = gathered.cols;
  const std::int64_t n = c_out.cols;
  const std::int64_t cols = col_end - col_begin;
  for (std::int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
    const std::int64_t rows = std::min(kRowBlock, row_end - r0);
    const float* a = nullptr;
    if (gathered.dtype == DType::fp32) {
      a = static_cast<const float*>(gathered.data) + r0 * k;
    } else {
      scratch.a.resize(static_cast<std::size_t>(rows * k));
      core::rows_to_float(gathered, r0, rows, scratch.a.data());
      a = scratch.a.data();
    }
    scratch.c.resize(static_cast<std::size_t>(rows * cols));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(cols), static_cast<int>(k), 1.0f, a, static_cast<int>(k),
                b32 + col_begin, static_cast<int>(n), 0.0f, scratch.c.data(),
                static_cast<int>(cols));
    core::float_block_to_view(scratch.c.data(), rows, cols, cols, c_out, r0, col_begin);
  }
}

}  // namespace asynctp::cpu
