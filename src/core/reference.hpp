// The float64 reference and the checks every test and `asynctp run --check`
// apply: poison outputs before a run, then require every element written and
// the relative Frobenius error against the float64 product within bounds.
#pragma once

#include <cstdint>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::core {

// concat(shards, rows) @ b in float64, row-major ((sum of shard rows) x b.cols).
// Inputs are read exactly (every storage dtype widens to double exactly).
std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& shards,
                                                const TensorView& b);

// Fills a host view with a NaN bit pattern no computation produces from
// finite inputs, so an element left unwritten is caught.
void poison(const TensorView& view) noexcept;

struct Comparison {
  double relative_frobenius_error = 0;  // ||got - ref||_F / ||ref||_F
  std::int64_t unwritten = 0;           // elements still holding the poison
  std::int64_t non_finite = 0;          // NaN/inf elements (unwritten included)
  bool ok(double tolerance) const noexcept {
    return unwritten == 0 && non_finite == 0 && relative_frobenius_error <= tolerance;
  }
};

// `reference` is row-major with got.rows x got.cols elements.
Comparison compare_to_reference(const TensorView& got, const std::vector<double>& reference);
// Exact comparison of two views of equal shape and dtype (the gathered A).
bool bitwise_equal_rows(const TensorView& got, std::int64_t got_row_begin,
                        const TensorView& expected) noexcept;

// Relative Frobenius error bound for outputs of `dtype` with fp32
// accumulation: output rounding dominates (2^-9 for bf16, 2^-12 for fp16).
double error_tolerance(DType dtype) noexcept;

}  // namespace asynctp::core
