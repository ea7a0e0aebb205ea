// The reduce-scatter's float64 reference and its derived tolerance, which
// every reduce-scatter test trusts: the reference against a hand-computed sum
// and an independent loop (uneven K-slices), and the tolerance against the
// rounding model it was derived from: partials rounded to the output dtype,
// summed in fp32, rounded once, must pass; a missing partial must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "asynctp/error.hpp"
#include "core/dtype_convert.hpp"
#include "core/reference.hpp"
#include "support/host_tensor.hpp"
#include "support/printers.hpp"
#include "support/seed.hpp"

namespace asynctp::core {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::Seed;

TEST(ReduceScatterReference, HandComputedSum) {
  // W = 2, M = 2 (one row per rank). Rank 0: k = 2, rank 1: k = 1.
  //   A0 = [[1, 2], [3, 4]], B0 = [[1, 0, 2], [0, 1, -1]] -> A0 B0 = [[1, 2, 0], [3, 4, 2]]
  //   A1 = [[5], [-6]],      B1 = [[1, 2, 3]]             -> A1 B1 = [[5, 10, 15], [-6, -12, -18]]
  //   sum = [[6, 12, 15], [-3, -8, -16]]: rank 0 gets row 0, rank 1 row 1.
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (bool col_major : {false, true}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (col_major ? " col" : " row"));
      HostTensor a0(dtype, 2, 2), b0(dtype, 2, 3, col_major), a1(dtype, 2, 1),
          b1(dtype, 1, 3, col_major);
      a0.set({1, 2, 3, 4});
      b0.set({1, 0, 2, 0, 1, -1});
      a1.set({5, -6});
      b1.set({1, 2, 3});
      const std::vector<TensorView> a = {a0.view(), a1.view()}, b = {b0.view(), b1.view()};
      EXPECT_EQ(reference_matmul_reduce_scatter(a, b, 0), (std::vector<double>{6, 12, 15}));
      EXPECT_EQ(reference_matmul_reduce_scatter(a, b, 1), (std::vector<double>{-3, -8, -16}));
    }
  }
}

TEST(ReduceScatterReference, AgreesWithALoopOverRanksAndUnevenSlices) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 3;
  constexpr std::int64_t kM = 4, kN = 7;
  const std::int64_t k[kWorld] = {5, 1, 9};
  std::vector<HostTensor> a, b;
  std::vector<TensorView> av, bv;
  for (int s = 0; s < kWorld; ++s) {
    a.emplace_back(DType::bf16, kWorld * kM, k[s]);
    b.emplace_back(DType::bf16, k[s], kN, s == 1);
  }
  for (int s = 0; s < kWorld; ++s) {
    a[static_cast<std::size_t>(s)].fill_normal(rng);
    b[static_cast<std::size_t>(s)].fill_normal(rng);
    av.push_back(a[static_cast<std::size_t>(s)].view());
    bv.push_back(b[static_cast<std::size_t>(s)].view());
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    const auto got = reference_matmul_reduce_scatter(av, bv, rank);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kM * kN));
    for (std::int64_t i = 0; i < kM; ++i) {
      for (std::int64_t j = 0; j < kN; ++j) {
        double sum = 0;
        for (int s = 0; s < kWorld; ++s) {
          for (std::int64_t p = 0; p < k[s]; ++p) {
            sum += load_as_double(av[static_cast<std::size_t>(s)], rank * kM + i, p) *
                   load_as_double(bv[static_cast<std::size_t>(s)], p, j);
          }
        }
        EXPECT_NEAR(got[static_cast<std::size_t>(i * kN + j)], sum, 1e-12 * (1 + std::fabs(sum)));
      }
    }
  }
}

TEST(ReduceScatterReference, RejectsInconsistentShapes) {
  HostTensor a(DType::fp32, 4, 3), b(DType::fp32, 3, 2), short_a(DType::fp32, 2, 3),
      wide_b(DType::fp32, 3, 5), odd(DType::fp32, 5, 3);
  EXPECT_THROW(reference_matmul_reduce_scatter({}, {}, 0), Error);
  EXPECT_THROW(reference_matmul_reduce_scatter({a.view()}, {}, 0), Error);
  EXPECT_THROW(reference_matmul_reduce_scatter({a.view(), a.view()}, {b.view(), b.view()}, 2),
               Error);
  EXPECT_THROW(reference_matmul_reduce_scatter({a.view(), short_a.view()}, {b.view(), b.view()}, 0),
               Error);
  EXPECT_THROW(reference_matmul_reduce_scatter({a.view(), a.view()}, {b.view(), wide_b.view()}, 0),
               Error);
  EXPECT_THROW(reference_matmul_reduce_scatter({odd.view(), odd.view()}, {b.view(), b.view()}, 0),
               Error);
}

TEST(ReduceScatterTolerance, FollowsTheDerivedFormula) {
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    // One rank: one GEMM output, rounded once more (a no-op in value).
    EXPECT_DOUBLE_EQ(reduce_scatter_error_tolerance(dtype, 1),
                     error_tolerance(dtype) + unit_roundoff(dtype));
    for (int w = 1; w < 8; ++w) {
      EXPECT_LT(reduce_scatter_error_tolerance(dtype, w),
                reduce_scatter_error_tolerance(dtype, w + 1));
    }
  }
  EXPECT_NEAR(reduce_scatter_error_tolerance(DType::bf16, 8), 0.0152, 1e-4);
  // NCCL's ring rounds each step's sum to the dtype: equal at W = 1 and for
  // fp32, (W - 1) sqrt(W) u of the dtype more elsewhere.
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    EXPECT_DOUBLE_EQ(nccl_reduce_scatter_error_tolerance(dtype, 1),
                     reduce_scatter_error_tolerance(dtype, 1));
  }
  EXPECT_DOUBLE_EQ(nccl_reduce_scatter_error_tolerance(DType::fp32, 8),
                   reduce_scatter_error_tolerance(DType::fp32, 8));
  EXPECT_NEAR(nccl_reduce_scatter_error_tolerance(DType::bf16, 8), 0.0925, 1e-4);
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(unit_roundoff(DType::fp16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DType::fp32), std::ldexp(1.0, -24));
}

float round_to(DType dtype, float x) {
  switch (dtype) {
    case DType::bf16:
      return bf16_to_float(float_to_bf16(x));
    case DType::fp16:
      return fp16_to_float(float_to_fp16(x));
    case DType::fp32:
      break;
  }
  return x;
}

// Relative Frobenius error of round(sum_s round(P_s)) against sum_s P_s, the
// model the tolerance was derived from, for W random partials of one chunk;
// `skip` (>= 0) leaves one partial out.
double model_error(DType dtype, int world, std::mt19937_64& rng, int skip) {
  constexpr int kElements = 4096;
  std::normal_distribution<double> normal;
  double diff2 = 0, ref2 = 0;
  for (int e = 0; e < kElements; ++e) {
    double exact = 0;
    float sum = 0;  // the fp32 reduction, in a fixed order
    for (int s = 0; s < world; ++s) {
      const double partial = normal(rng) * 8;
      exact += partial;
      if (s != skip) sum += round_to(dtype, static_cast<float>(partial));
    }
    const double got = round_to(dtype, sum);
    diff2 += (got - exact) * (got - exact);
    ref2 += exact * exact;
  }
  return std::sqrt(diff2 / ref2);
}

TEST(ReduceScatterTolerance, AcceptsTheRoundingModelAndRejectsAMissingPartial) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (int world : {1, 2, 3, 5, 8}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " W=" + std::to_string(world));
      const double tolerance = reduce_scatter_error_tolerance(dtype, world);
      EXPECT_LE(model_error(dtype, world, rng, -1), tolerance);
      if (world > 1) {
        EXPECT_GT(model_error(dtype, world, rng, world - 1), 10 * tolerance);
      }
    }
  }
}

}  // namespace
}  // namespace asynctp::core
