// The reduce-scatter's float64 reference and its error bound, which every
// reduce-scatter test trusts: the reference against a hand-computed sum and
// an independent loop (uneven K-slices), and the bound against the rounding
// model it was derived from (partials accumulated in fp32, rounded to the
// output dtype, summed in fp32 or in a ring of the dtype, rounded): every
// element within its bound, for small shapes and cancelling partials too; a
// missing or doubled partial must break it.
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
      EXPECT_EQ(reference_matmul_reduce_scatter(a, b, 0).value, (std::vector<double>{6, 12, 15}));
      EXPECT_EQ(reference_matmul_reduce_scatter(a, b, 1).value,
                (std::vector<double>{-3, -8, -16}));
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
    const auto got = reference_matmul_reduce_scatter(av, bv, rank).value;
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

TEST(ReduceScatterBound, GrowsWithTheSummationItAllowsFor) {
  // One element, W = 2: P_0 = 3 (k = 1: 1 x 3), P_1 = -2 (k = 1: 1 x -2).
  HostTensor a(DType::fp32, 2, 1), b0(DType::fp32, 1, 1), b1(DType::fp32, 1, 1);
  a.set({1, 1});
  b0.set({3});
  b1.set({-2});
  const ReduceScatterReference ref =
      reference_matmul_reduce_scatter({a.view(), a.view()}, {b0.view(), b1.view()}, 0);
  EXPECT_EQ(ref.value, std::vector<double>{1});
  const double g = std::ldexp(1.0, -23) / (1 - std::ldexp(1.0, -23));
  EXPECT_NEAR(ref.magnitude[0], 5 * (1 + g), 1e-12);
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    const double fp32 = reduce_scatter_error_bound(ref, dtype, PartialSum::fp32)[0];
    const double ring = reduce_scatter_error_bound(ref, dtype, PartialSum::output_dtype)[0];
    // At least the partials' rounding (u S) and the output's (u |C|).
    EXPECT_GT(fp32, unit_roundoff(dtype) * 6);
    EXPECT_GT(ring, fp32);
  }
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

// What the op computes for rank 0 under the rounding model the bound was
// derived from: each partial accumulated in fp32 over its K-slice, rounded
// to the dtype, summed (in fp32, or in a ring that rounds each running sum
// to the dtype), rounded. Rank `skip`'s partial is left out, rank
// `doubled`'s counted twice (-1: none).
HostTensor model_out(const std::vector<TensorView>& a, const std::vector<TensorView>& b,
                     std::int64_t m, DType dtype, PartialSum how, int skip, int doubled) {
  const std::int64_t n = b.front().cols;
  HostTensor out(dtype, m, n);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (std::size_t s = 0; s < a.size(); ++s) {
        float partial = 0;
        for (std::int64_t p = 0; p < a[s].cols; ++p) {
          partial += static_cast<float>(load_as_double(a[s], i, p) * load_as_double(b[s], p, j));
        }
        const float rounded = round_to(dtype, partial);
        for (int times = 0; times < (static_cast<int>(s) == skip ? 0 : static_cast<int>(s) == doubled ? 2 : 1); ++times) {
          sum += rounded;
          if (how == PartialSum::output_dtype) sum = round_to(dtype, sum);
        }
      }
      store_from_float(out.view(), i, j, round_to(dtype, sum));
    }
  }
  return out;
}

struct Case {
  int world;
  std::int64_t m, n, k;
};

// Partials that cancel: every rank but the first holds a B close to minus
// the first rank's over its K-slice (its A equals the first's), so C is far
// smaller than each partial.
void make_cancelling(std::vector<HostTensor>& a, std::vector<HostTensor>& b, int world) {
  for (int s = 1; s < world; ++s) {
    a[static_cast<std::size_t>(s)] = a[0];
    HostTensor& bs = b[static_cast<std::size_t>(s)];
    for (std::int64_t p = 0; p < bs.view().rows; ++p) {
      for (std::int64_t j = 0; j < bs.view().cols; ++j) {
        const double v = load_as_double(b[0].view(), p, j);
        store_from_float(bs.view(), p, j, static_cast<float>(s % 2 == 1 ? -v : v * 1.01));
      }
    }
  }
}

TEST(ReduceScatterBound, HoldsForTheRoundingModelAndBreaksForAMissingOrDoubledPartial) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (PartialSum how : {PartialSum::fp32, PartialSum::output_dtype}) {
      for (const Case c : {Case{1, 1, 3, 2}, Case{2, 2, 2, 1}, Case{3, 4, 5, 7},
                           Case{6, 2, 3, 64}, Case{8, 8, 16, 40}, Case{4, 16, 16, 128}}) {
        for (bool cancelling : {false, true}) {
          SCOPED_TRACE(std::string(to_string(dtype)) + " W=" + std::to_string(c.world) +
                       " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" +
                       std::to_string(c.k) + (how == PartialSum::fp32 ? " fp32 sum" : " ring") +
                       (cancelling ? " cancelling" : ""));
          std::vector<HostTensor> a, b;
          std::vector<TensorView> av, bv;
          for (int s = 0; s < c.world; ++s) {
            a.emplace_back(dtype, c.world * c.m, c.k);
            b.emplace_back(dtype, c.k, c.n);
            a.back().fill_normal(rng);
            b.back().fill_normal(rng);
          }
          if (cancelling) make_cancelling(a, b, c.world);
          for (int s = 0; s < c.world; ++s) {
            av.push_back(a[static_cast<std::size_t>(s)].view());
            bv.push_back(b[static_cast<std::size_t>(s)].view());
          }
          const ReduceScatterReference ref = reference_matmul_reduce_scatter(av, bv, 0);
          const std::vector<double> bound = reduce_scatter_error_bound(ref, dtype, how);
          const HostTensor good = model_out(av, bv, c.m, dtype, how, -1, -1);
          EXPECT_EQ(compare_within_bound(good.view(), ref.value, bound).beyond, 0);
          // A wrong partial shows in the elements where it is not small: in a
          // handful of elements its worst ratio is a matter of chance (the
          // ring's bound, ~W u S, is a few times smaller than one partial),
          // over a hundred it is not.
          if (c.world == 1 || cancelling || c.m * c.n < 100) continue;
          for (int wrong : {0, c.world - 1}) {
            const HostTensor missing = model_out(av, bv, c.m, dtype, how, wrong, -1);
            EXPECT_GT(compare_within_bound(missing.view(), ref.value, bound).worst_ratio, 3)
                << "rank " << wrong << "'s partial left out";
            const HostTensor doubled = model_out(av, bv, c.m, dtype, how, -1, wrong);
            EXPECT_GT(compare_within_bound(doubled.view(), ref.value, bound).worst_ratio, 3)
                << "rank " << wrong << "'s partial counted twice";
          }
        }
      }
    }
  }
}

// Results in the dtype's subnormal range (products of ~2^-18 in fp16,
// 2^-130 in bf16, 2^-140 in fp32), where rounding errs by up to half a
// spacing whatever the value: the rounding model must stay within the
// bound. In fp16 a partial spans tens of spacings there, and leaving one
// out must still break the bound (in bf16 and fp32 the fp32 accumulation's
// possible flush to zero, 2^-126 a product, dwarfs such partials).
TEST(ReduceScatterBound, HoldsInTheSubnormalRange) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  struct Scale {
    DType dtype;
    int exponent;  // every input scaled by 2^exponent
  };
  for (const Scale scale : {Scale{DType::fp16, -9}, Scale{DType::bf16, -65},
                            Scale{DType::fp32, -70}}) {
    for (PartialSum how : {PartialSum::fp32, PartialSum::output_dtype}) {
      for (const Case c : {Case{1, 4, 8, 1}, Case{3, 4, 8, 3}, Case{8, 8, 16, 2}}) {
        SCOPED_TRACE(std::string(to_string(scale.dtype)) + " W=" + std::to_string(c.world) +
                     " k=" + std::to_string(c.k) + (how == PartialSum::fp32 ? " fp32 sum" : " ring"));
        std::vector<HostTensor> a, b;
        std::vector<TensorView> av, bv;
        for (int s = 0; s < c.world; ++s) {
          a.emplace_back(scale.dtype, c.world * c.m, c.k);
          b.emplace_back(scale.dtype, c.k, c.n);
          for (HostTensor* t : {&a.back(), &b.back()}) {
            t->fill_normal(rng);
            const TensorView v = t->view();
            for (std::int64_t i = 0; i < v.rows; ++i) {
              for (std::int64_t j = 0; j < v.cols; ++j) {
                store_from_float(v, i, j,
                                 static_cast<float>(std::ldexp(load_as_double(v, i, j), scale.exponent)));
              }
            }
          }
          av.push_back(a.back().view());
          bv.push_back(b.back().view());
        }
        const ReduceScatterReference ref = reference_matmul_reduce_scatter(av, bv, 0);
        const std::vector<double> bound = reduce_scatter_error_bound(ref, scale.dtype, how);
        const HostTensor good = model_out(av, bv, c.m, scale.dtype, how, -1, -1);
        const BoundComparison within = compare_within_bound(good.view(), ref.value, bound);
        EXPECT_EQ(within.beyond, 0) << "worst " << within.worst_error << " > " << within.worst_bound;
        // Most outputs really are subnormal: the check is not vacuous.
        const double smallest_normal = std::ldexp(1.0, scale.dtype == DType::fp16 ? -14 : -126);
        std::size_t subnormal = 0;
        for (double x : ref.value) subnormal += std::fabs(x) < smallest_normal ? 1 : 0;
        EXPECT_GE(2 * subnormal, ref.value.size());
        if (scale.dtype != DType::fp16 || c.world < 3) continue;
        const HostTensor missing = model_out(av, bv, c.m, scale.dtype, how, 0, -1);
        EXPECT_GT(compare_within_bound(missing.view(), ref.value, bound).worst_ratio, 3)
            << "rank 0's partial left out";
      }
    }
  }
}

}  // namespace
}  // namespace asynctp::core
