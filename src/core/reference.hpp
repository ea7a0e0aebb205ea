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

// Rows [rank*m, (rank+1)*m) of sum over s of a[s] @ b[s] in float64,
// row-major (m x n), where W = a.size() ranks and m = M / W: what rank
// `rank` of fused_matmul_reduce_scatter receives. Every a[s] is M x k_s and
// b[s] is k_s x n (the K-slices may differ). Inputs are read exactly.
std::vector<double> reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
                                                    const std::vector<TensorView>& b, int rank);

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

// The unit roundoff of `dtype`: half the spacing of its values in [1, 2),
// the largest relative error of rounding to nearest (bf16 2^-8, fp16 2^-11,
// fp32 2^-24).
double unit_roundoff(DType dtype) noexcept;

// Relative Frobenius error bound of fused_matmul_reduce_scatter's output of
// `dtype` over `world_size` ranks, derived from what it computes:
//     out = round( sum over s of round(P^_s) )
// P^_s is rank s's partial A_s @ B_s accumulated in fp32; round() rounds to
// nearest in the output dtype (the partials cross the link in it, as with
// NCCL and PyTorch); the sum is in fp32, over the W partials in a fixed
// order, and rounded once. With C = sum of the exact P_s, e =
// error_tolerance(dtype), u = unit_roundoff(dtype), u32 = 2^-24:
//  - each round(P^_s) is one GEMM output of `dtype`, bounded as the
//    all-gather op's outputs are: ||round(P^_s) - P_s||_F <= e ||P_s||_F;
//  - the W errors, all aligned in the worst case, add to at most
//    e * sum_s ||P_s||_F <= e sqrt(W) (sum_s ||P_s||_F^2)^(1/2)
//    (Cauchy-Schwarz), and sum_s ||P_s||_F^2 = ||C||_F^2 for uncorrelated
//    partials (in expectation: independent zero-mean inputs, as the tests
//    draw). Where partials cancel no bound relative to C exists: the
//    rounding of a partial scales with the partial, not with C;
//  - the fp32 sum of W terms adds at most (W - 1) u32 sum_s |round(P^_s)|,
//    by the same argument (W - 1) u32 sqrt(W) ||C||_F;
//  - the final rounding adds at most u ||C||_F.
// Hence, to first order in u:
//     tolerance = sqrt(W) e + (W - 1) sqrt(W) u32 + u.
// For bf16: 7.9e-3 at W = 1, 0.015 at W = 8; for fp32 (where e, the
// accumulation's allowance, dominates) 1e-5 and 2.8e-5. The
// expected error of random inputs is a few times smaller (rounding errors
// are not aligned), so a missing or doubled partial (error ~ 1/sqrt(W))
// fails by orders of magnitude.
double reduce_scatter_error_tolerance(DType dtype, int world_size) noexcept;

// The same bound when the reduction is NCCL's ring reduce-scatter on the
// output dtype (the NCCL transport's decomposed path): each of the W - 1
// ring steps adds in fp32 but stores its partial sum in `dtype`, so the
// fp32 sum's (W - 1) sqrt(W) u32 term becomes (W - 1) sqrt(W) u:
//     tolerance = sqrt(W) e + (W - 1) sqrt(W) u + u.
// Equal to reduce_scatter_error_tolerance at W = 1 and for fp32; bf16 at
// W = 8: 0.093.
double nccl_reduce_scatter_error_tolerance(DType dtype, int world_size) noexcept;

}  // namespace asynctp::core
