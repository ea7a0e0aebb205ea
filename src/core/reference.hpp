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

// How a run sums the W partials of an element of fused_matmul_reduce_scatter's
// out, each partial already rounded to the output dtype.
enum class PartialSum {
  fp32,          // in fp32, in any order; the total rounded to the dtype once
  output_dtype,  // a ring's W - 1 steps, each adding in fp32 (or exactly) and
                 // storing its running sum in the dtype (NCCL's reduce-scatter)
};

// Rank `rank`'s out of fused_matmul_reduce_scatter in float64, with what its
// error bound (reduce_scatter_error_bound) is made of, every vector row-major
// m x n. P_s = a[s] @ b[s] is rank s's exact partial and G_s = |a[s]| |b[s]|
// (elementwise absolute values) its magnitude, both over rank's m rows.
struct ReduceScatterReference {
  std::vector<double> value;  // C = sum over s of P_s
  // sum over s of (|P_s| + g_s G_s): a bound on sum over s of |P^_s|, the
  // fp32-accumulated partials' magnitudes, with g_s = gamma(k_s, 2^-23).
  std::vector<double> magnitude;
  // sum over s of g_s G_s, plus the float64 reference's own error
  // (gamma(k_s + W, 2^-53) G_s, negligible but included so that the bound
  // holds of the computed `value`, not only of the exact C).
  std::vector<double> accumulation_error;
  int world_size = 1;
};

// Rows [rank*m, (rank+1)*m) of sum over s of a[s] @ b[s] in float64, where
// W = a.size() ranks and m = M / W: what rank `rank` of
// fused_matmul_reduce_scatter receives, with its error terms. Every a[s] is
// M x k_s and b[s] is k_s x n (the K-slices may differ). Inputs are read
// exactly.
ReduceScatterReference reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
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

// The spacing of `dtype`'s subnormal numbers, its smallest positive value
// (bf16 2^-133, fp16 2^-24, fp32 2^-149): a rounding into the subnormal range
// errs by up to half of it, whatever the value's size.
double subnormal_spacing(DType dtype) noexcept;

// The unit roundoff of `dtype`: half the spacing of its values in [1, 2),
// the largest relative error of rounding to nearest (bf16 2^-8, fp16 2^-11,
// fp32 2^-24).
double unit_roundoff(DType dtype) noexcept;

// A bound, element by element, on |out - reference.value| for any correct
// run of fused_matmul_reduce_scatter whose out is of `dtype` and whose
// partials were summed as `sum` says. Not a statistical allowance: it holds
// for every input, however few elements or however much the partials
// cancel, results in the subnormal range included (barring overflow). What
// the op computes, per element:
//     out = round( sum over s of round(P^_s) )
// P^_s is rank s's partial accumulated in fp32 over its k_s products;
// round() rounds to nearest in `dtype` (the partials cross the link in it):
// |round(x) - x| <= u |x| + h/2, u = unit_roundoff(dtype), h =
// subnormal_spacing(dtype) (below the normal range rounding errs by up to
// half a subnormal spacing, whatever |x|). With the terms of
// ReduceScatterReference (C, S = magnitude, E_acc = accumulation_error):
//  1. |P^_s - P_s| <= g_s G_s, g_s = gamma(k_s, 2^-23) = k_s 2^-23 /
//     (1 - k_s 2^-23): any order or blocking of the fp32 sum (split-K,
//     tensor-core MMAs) and rounding toward zero (tensor cores truncate)
//     included, hence 2^-23, not 2^-24. So |P^_s| <= |P_s| + g_s G_s, whose
//     sum over s is S, and the W accumulation errors add to E_acc.
//  2. |round(P^_s) - P^_s| <= u |P^_s|: together at most u S; and
//     |round(P^_s)| <= (1 + u) |P^_s|.
//  3. Summing W terms x_s in any order with each addition's relative error
//     at most v gives an error of at most gamma(W - 1, v) sum |x_s| (Higham,
//     Accuracy and Stability, 4.2): at most gamma(W - 1, v) (1 + u) S, with
//     v = 2^-24 for PartialSum::fp32 and v = u + 2^-24 + u 2^-24 for
//     PartialSum::output_dtype (an fp32 addition, then rounding to dtype).
//  4. The total T then lies within e = E_acc + u S + gamma(W - 1, v)(1 + u) S
//     of C, and rounding it to dtype adds at most u |T| <= u (|C| + e).
//     (In the ring the last step's rounding is already in 3; counting it
//     again only loosens the bound.)
//  5. Underflow: every rounding to dtype may err by h/2 more than its
//     relative bound (W partials, the total, and in the ring its W - 1
//     running sums); the fp32 accumulation's k_s products by up to 2^-126
//     each (a product below fp32's normal range may be flushed to zero),
//     which E_acc and S carry (an fp32 sum whose result is subnormal is
//     exact). A whole h per rounding, not h/2, covers the higher-order terms
//     (u or gamma times h/2).
// Hence, exactly and not only to first order, with e now including the
// partials' and the running sums' underflow, W h (ring: (2 W - 1) h):
//     bound = 1.001 (e + u (|C| + e) + h),
// the factor 1.001 covering the float64 evaluation of the terms. Elements
// whose partials cancel get a bound relative to S, not to C, as they must.
// For random bf16 inputs the bound is ~u (1 + 0.8 sqrt(W)) relative to
// ||C||_F (S ~ 0.8 sqrt(W) |C|), ~0.013 at W = 8, plus the accumulation
// term, ~0.64 sqrt(W) k^1.5 2^-23 (0.06 at k = 4096, W = 8): the worst case
// of fp32 accumulation grows as k, its typical error as sqrt(k). A missing
// or doubled partial (error ~ |P_s| ~ |C| / sqrt(W)) breaks the bound by a
// factor of tens at small k, wherever P_s is not small; past k ~ 16384 the
// accumulation term alone is as large as a partial, and the check loses its
// power to tell one missing.
std::vector<double> reduce_scatter_error_bound(const ReduceScatterReference& reference,
                                               DType dtype, PartialSum sum);

// ||bound||_F / ||reference||_F: the bound as a relative Frobenius figure,
// for reports (the check itself is elementwise).
double relative_frobenius_norm(const std::vector<double>& bound,
                               const std::vector<double>& reference);

// An output against a reference and a bound of equal size: the elements
// (finite and written) whose error exceeds their bound, and the worst.
struct BoundComparison {
  std::int64_t beyond = 0;  // elements with |got - reference| > bound
  std::int64_t worst_row = 0;
  std::int64_t worst_col = 0;
  double worst_ratio = 0;  // largest |got - reference| / bound (inf when bound is 0)
  double worst_error = 0;  // |got - reference| there
  double worst_bound = 0;  // and its bound
};
BoundComparison compare_within_bound(const TensorView& got, const std::vector<double>& reference,
                                     const std::vector<double>& bound);

}  // namespace asynctp::core
