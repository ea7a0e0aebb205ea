#include "core/reference.hpp"

#include <cblas.h>

#include <cmath>
#include <cstring>

#include "asynctp/error.hpp"
#include "core/dtype_convert.hpp"

namespace asynctp::core {
namespace {

constexpr std::uint16_t kPoison16 = 0xffff;  // NaN with every payload bit set
constexpr std::uint32_t kPoison32 = 0xffffffffu;

bool is_poison(const TensorView& view, std::int64_t row, std::int64_t col) noexcept {
  const std::int64_t offset = row * view.row_stride + col * view.col_stride;
  if (view.dtype == DType::fp32) {
    std::uint32_t bits;
    std::memcpy(&bits, static_cast<const float*>(view.data) + offset, sizeof bits);
    return bits == kPoison32;
  }
  return static_cast<const std::uint16_t*>(view.data)[offset] == kPoison16;
}

// fp32 accumulation's unit: 2^-23, not 2^-24, because tensor cores may
// round their fp32 sums toward zero.
const double kAccumulationUnit = std::ldexp(1.0, -23);
const double kFloat64Unit = std::ldexp(1.0, -53);
// An fp32 product below the normal range may be flushed to zero: its error
// is at most fp32's smallest normal value.
const double kAccumulationUnderflow = std::ldexp(1.0, -126);
// Covers the float64 evaluation of the bound's own terms (relative 1e-12 at
// most), with room to spare.
constexpr double kEvaluationFactor = 1.001;

// gamma(n, v) = n v / (1 - n v): the relative error n operations of unit
// roundoff v can pile up (Higham, Accuracy and Stability, 3.1); infinite
// once n v reaches 1, where no bound of this form exists.
double gamma(std::int64_t n, double unit) noexcept {
  const double nv = static_cast<double>(n < 0 ? 0 : n) * unit;
  return nv < 1 ? nv / (1 - nv) : INFINITY;
}

// out (m x n) = a (m x k) @ b (k x n), all row-major float64.
void product_into(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                  std::int64_t n, std::int64_t k, std::vector<double>& out) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0, a.data(), static_cast<int>(k), b.data(),
              static_cast<int>(n), 0.0, out.data(), static_cast<int>(n));
}

}  // namespace

std::vector<double> reference_all_gather_matmul(const std::vector<TensorView>& shards,
                                                const TensorView& b) {
  if (shards.empty()) throw Error(ErrorCode::invalid_argument, "shards: must not be empty");
  const std::int64_t k = b.rows;
  const std::int64_t n = b.cols;
  std::int64_t total_rows = 0;
  for (const auto& s : shards) {
    if (s.cols != k) {
      throw Error(ErrorCode::invalid_argument, "shards: every shard must have b.rows columns");
    }
    total_rows += s.rows;
  }
  std::vector<double> a(static_cast<std::size_t>(total_rows * k));
  std::int64_t row = 0;
  for (const auto& s : shards) {
    for (std::int64_t i = 0; i < s.rows; ++i, ++row) {
      for (std::int64_t j = 0; j < k; ++j) a[row * k + j] = load_as_double(s, i, j);
    }
  }
  std::vector<double> bd(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = 0; j < n; ++j) bd[i * n + j] = load_as_double(b, i, j);
  }
  std::vector<double> c(static_cast<std::size_t>(total_rows * n));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(total_rows),
              static_cast<int>(n), static_cast<int>(k), 1.0, a.data(), static_cast<int>(k),
              bd.data(), static_cast<int>(n), 0.0, c.data(), static_cast<int>(n));
  return c;
}

ReduceScatterReference reference_matmul_reduce_scatter(const std::vector<TensorView>& a,
                                                       const std::vector<TensorView>& b, int rank) {
  const auto fail = [](const char* rule) {
    throw Error(ErrorCode::invalid_argument, std::string("reference: ") + rule);
  };
  if (a.empty() || a.size() != b.size()) fail("a and b must hold one view per rank");
  const int world = static_cast<int>(a.size());
  if (rank < 0 || rank >= world) fail("rank must lie in [0, a.size())");
  const std::int64_t rows = a.front().rows;
  const std::int64_t n = b.front().cols;
  if (rows % world != 0) fail("a's rows must be divisible by the number of ranks");
  const std::int64_t m = rows / world;
  const auto elements = static_cast<std::size_t>(m * n);
  ReduceScatterReference ref;
  ref.world_size = world;
  ref.value.assign(elements, 0.0);
  ref.magnitude.assign(elements, 0.0);
  ref.accumulation_error.assign(elements, 0.0);
  std::vector<double> product(elements);
  for (int s = 0; s < world; ++s) {
    const TensorView& as = a[static_cast<std::size_t>(s)];
    const TensorView& bs = b[static_cast<std::size_t>(s)];
    if (as.rows != rows || bs.cols != n || bs.rows != as.cols) {
      fail("every a[s] must be M x k_s and every b[s] k_s x n");
    }
    const std::int64_t k = as.cols;
    std::vector<double> ad(static_cast<std::size_t>(m * k));
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < k; ++j) ad[i * k + j] = load_as_double(as, rank * m + i, j);
    }
    std::vector<double> bd(static_cast<std::size_t>(k * n));
    for (std::int64_t i = 0; i < k; ++i) {
      for (std::int64_t j = 0; j < n; ++j) bd[i * n + j] = load_as_double(bs, i, j);
    }
    // P_s, then G_s = |A_s| |B_s| in the same buffer.
    product_into(ad, bd, m, n, k, product);
    for (std::size_t e = 0; e < elements; ++e) {
      ref.value[e] += product[e];
      ref.magnitude[e] += std::fabs(product[e]);
    }
    for (double& x : ad) x = std::fabs(x);
    for (double& x : bd) x = std::fabs(x);
    product_into(ad, bd, m, n, k, product);
    const double accumulation = gamma(k, kAccumulationUnit);
    const double own = gamma(k + world, kFloat64Unit);
    const double underflow = static_cast<double>(k) * kAccumulationUnderflow;
    for (std::size_t e = 0; e < elements; ++e) {
      ref.magnitude[e] += accumulation * product[e] + underflow;
      ref.accumulation_error[e] += (accumulation + own) * product[e] + underflow;
    }
  }
  return ref;
}

std::vector<double> reduce_scatter_error_bound(const ReduceScatterReference& reference,
                                               DType dtype, PartialSum sum) {
  const double u = unit_roundoff(dtype);
  const double u32 = unit_roundoff(DType::fp32);
  const double step = sum == PartialSum::fp32 ? u32 : u + u32 + u * u32;
  const double summation = gamma(reference.world_size - 1, step) * (1 + u);
  // Underflow: a whole subnormal spacing per rounding to dtype (the
  // partials', and in the ring every running sum's; the total's below).
  const double h = subnormal_spacing(dtype);
  const int world = reference.world_size;
  const double partials_underflow = h * (sum == PartialSum::fp32 ? world : 2 * world - 1);
  std::vector<double> bound(reference.value.size());
  for (std::size_t e = 0; e < bound.size(); ++e) {
    const double before_output_rounding = reference.accumulation_error[e] +
                                          (u + summation) * reference.magnitude[e] +
                                          partials_underflow;
    bound[e] = kEvaluationFactor *
               (before_output_rounding +
                u * (std::fabs(reference.value[e]) + before_output_rounding) + h);
  }
  return bound;
}

double relative_frobenius_norm(const std::vector<double>& bound,
                               const std::vector<double>& reference) {
  double bound2 = 0;
  double ref2 = 0;
  for (std::size_t e = 0; e < bound.size() && e < reference.size(); ++e) {
    bound2 += bound[e] * bound[e];
    ref2 += reference[e] * reference[e];
  }
  return ref2 > 0 ? std::sqrt(bound2 / ref2) : std::sqrt(bound2);
}

BoundComparison compare_within_bound(const TensorView& got, const std::vector<double>& reference,
                                     const std::vector<double>& bound) {
  const auto elements = static_cast<std::size_t>(got.rows * got.cols);
  if (reference.size() != elements || bound.size() != elements) {
    throw Error(ErrorCode::invalid_argument,
                "reference, bound: sizes must equal got.rows * got.cols");
  }
  BoundComparison result;
  for (std::int64_t i = 0; i < got.rows; ++i) {
    for (std::int64_t j = 0; j < got.cols; ++j) {
      const auto e = static_cast<std::size_t>(i * got.cols + j);
      const double error = std::fabs(load_as_double(got, i, j) - reference[e]);
      if (!std::isfinite(error) || error <= bound[e]) continue;
      ++result.beyond;
      const double ratio = bound[e] > 0 ? error / bound[e] : INFINITY;
      if (ratio > result.worst_ratio) {
        result.worst_ratio = ratio;
        result.worst_row = i;
        result.worst_col = j;
        result.worst_error = error;
        result.worst_bound = bound[e];
      }
    }
  }
  return result;
}

void poison(const TensorView& view) noexcept {
  for (std::int64_t i = 0; i < view.rows; ++i) {
    for (std::int64_t j = 0; j < view.cols; ++j) {
      const std::int64_t offset = i * view.row_stride + j * view.col_stride;
      if (view.dtype == DType::fp32) {
        std::memcpy(static_cast<float*>(view.data) + offset, &kPoison32, sizeof kPoison32);
      } else {
        static_cast<std::uint16_t*>(view.data)[offset] = kPoison16;
      }
    }
  }
}

Comparison compare_to_reference(const TensorView& got, const std::vector<double>& reference) {
  if (static_cast<std::int64_t>(reference.size()) != got.rows * got.cols) {
    throw Error(ErrorCode::invalid_argument, "reference: size must equal got.rows * got.cols");
  }
  Comparison result;
  double diff2 = 0;
  double ref2 = 0;
  for (std::int64_t i = 0; i < got.rows; ++i) {
    for (std::int64_t j = 0; j < got.cols; ++j) {
      const double expected = reference[static_cast<std::size_t>(i * got.cols + j)];
      ref2 += expected * expected;
      if (is_poison(got, i, j)) ++result.unwritten;
      const double value = load_as_double(got, i, j);
      if (!std::isfinite(value)) {
        ++result.non_finite;
        continue;
      }
      diff2 += (value - expected) * (value - expected);
    }
  }
  result.relative_frobenius_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (result.non_finite > 0) result.relative_frobenius_error = INFINITY;
  return result;
}

bool bitwise_equal_rows(const TensorView& got, std::int64_t got_row_begin,
                        const TensorView& expected) noexcept {
  const std::size_t bytes = element_size(got.dtype);
  for (std::int64_t i = 0; i < expected.rows; ++i) {
    for (std::int64_t j = 0; j < expected.cols; ++j) {
      const auto* g = static_cast<const char*>(got.data) +
                      ((got_row_begin + i) * got.row_stride + j * got.col_stride) * bytes;
      const auto* e = static_cast<const char*>(expected.data) +
                      (i * expected.row_stride + j * expected.col_stride) * bytes;
      if (std::memcmp(g, e, bytes) != 0) return false;
    }
  }
  return true;
}

double error_tolerance(DType dtype) noexcept {
  switch (dtype) {
    // About one output ulp: rounding alone gives ~2^-9/sqrt(3) for bf16.
    case DType::bf16:
      return 4e-3;
    case DType::fp16:
      return 5e-4;
    case DType::fp32:
      return 1e-5;  // fp32 accumulation over long k
  }
  return 0;
}

double subnormal_spacing(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16:
      return std::ldexp(1.0, -133);
    case DType::fp16:
      return std::ldexp(1.0, -24);
    case DType::fp32:
      return std::ldexp(1.0, -149);
  }
  return 0;
}

double unit_roundoff(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16:
      return std::ldexp(1.0, -8);
    case DType::fp16:
      return std::ldexp(1.0, -11);
    case DType::fp32:
      return std::ldexp(1.0, -24);
  }
  return 0;
}

}  // namespace asynctp::core
