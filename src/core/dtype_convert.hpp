// Scalar and block conversions between the storage dtypes and fp32/fp64.
// Narrowing conversions round to nearest, ties to even, like the GPU's
// cvt.rn instructions, so CPU and GPU outputs agree bit for bit on the same
// fp32 accumulators.
#pragma once

#include <cstdint>

#include "asynctp/tensor.hpp"

namespace asynctp::core {

float bf16_to_float(std::uint16_t bits) noexcept;
std::uint16_t float_to_bf16(float value) noexcept;
float fp16_to_float(std::uint16_t bits) noexcept;
std::uint16_t float_to_fp16(float value) noexcept;

// Element (row, col) of a host view, widened to double.
double load_as_double(const TensorView& view, std::int64_t row, std::int64_t col) noexcept;
// Stores `value` (rounded to the view's dtype) at (row, col) of a host view.
void store_from_float(const TensorView& view, std::int64_t row, std::int64_t col,
                      float value) noexcept;

// Copies rows [row_begin, row_begin + rows) of `src` into a dense row-major
// fp32 buffer `dst` (rows x src.cols), whatever src's dtype and strides.
void rows_to_float(const TensorView& src, std::int64_t row_begin, std::int64_t rows,
                   float* dst) noexcept;
// Writes a dense row-major fp32 block (rows x cols) into `dst` at
// (row_begin, col_begin), rounding to dst's dtype.
void float_block_to_view(const float* src, std::int64_t rows, std::int64_t cols,
                         std::int64_t src_ld, const TensorView& dst, std::int64_t row_begin,
                         std::int64_t col_begin) noexcept;

}  // namespace asynctp::core
