// The float64 reference and the checks built on it are what every other test
// trusts, so they are checked here against hand-computed products and an
// independent triple loop, and shown able to fail: poison is caught, NaNs are
// caught, and the tolerance rejects a real error while accepting rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "asynctp/error.hpp"
#include "core/dtype_convert.hpp"
#include "core/reference.hpp"
#include "support/host_tensor.hpp"
#include "support/seed.hpp"

namespace asynctp::core {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::Seed;

TEST(Reference, HandComputedProduct) {
  // Two shards of one row each, gathered into A = [[1, 2], [3, -4]];
  // B = [[5, 6, 7], [8, 9, -10]]: A @ B = [[21, 24, -13], [-17, -18, 61]].
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (bool col_major : {false, true}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (col_major ? " col" : " row"));
      HostTensor a0(dtype, 1, 2), a1(dtype, 1, 2), b(dtype, 2, 3, col_major);
      a0.set({1, 2});
      a1.set({3, -4});
      b.set({5, 6, 7, 8, 9, -10});
      const auto c = reference_all_gather_matmul({a0.view(), a1.view()}, b.view());
      EXPECT_EQ(c, (std::vector<double>{21, 24, -13, -17, -18, 61}));
    }
  }
}

TEST(Reference, ExactInputsAndAgreesWithATripleLoop) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  // Uneven shard heights are fine for the reference.
  HostTensor s0(DType::bf16, 5, 19), s1(DType::bf16, 3, 19), s2(DType::bf16, 7, 19);
  HostTensor b(DType::bf16, 19, 11, /*col_major=*/true);
  for (HostTensor* t : {&s0, &s1, &s2, &b}) t->fill_normal(rng);
  const std::vector<TensorView> shards = {s0.view(), s1.view(), s2.view()};
  const auto c = reference_all_gather_matmul(shards, b.view());
  ASSERT_EQ(c.size(), 15u * 11u);
  std::int64_t row = 0;
  for (const TensorView& s : shards) {
    for (std::int64_t i = 0; i < s.rows; ++i, ++row) {
      for (std::int64_t j = 0; j < 11; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < 19; ++p) {
          sum += static_cast<double>(bf16_to_float(static_cast<const std::uint16_t*>(s.data)[i * 19 + p])) *
                 bf16_to_float(static_cast<const std::uint16_t*>(b.data())[j * 19 + p]);
        }
        EXPECT_NEAR(c[static_cast<std::size_t>(row * 11 + j)], sum, 1e-12 * (1 + std::fabs(sum)));
      }
    }
  }
}

TEST(Reference, RejectsInconsistentShapes) {
  HostTensor a(DType::fp32, 2, 3), b(DType::fp32, 4, 2);
  EXPECT_THROW(reference_all_gather_matmul({a.view()}, b.view()), Error);
  EXPECT_THROW(reference_all_gather_matmul({}, b.view()), Error);
  HostTensor c(DType::fp32, 2, 2);
  EXPECT_THROW(compare_to_reference(c.view(), std::vector<double>(3, 1.0)), Error);
}

TEST(Compare, ExactCopyHasZeroError) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    HostTensor t(dtype, 6, 9);
    t.fill_normal(rng);
    std::vector<double> ref;
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 9; ++j) ref.push_back(load_as_double(t.view(), i, j));
    }
    const Comparison cmp = compare_to_reference(t.view(), ref);
    EXPECT_EQ(cmp.relative_frobenius_error, 0.0);
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_EQ(cmp.non_finite, 0);
    EXPECT_TRUE(cmp.ok(0.0));
  }
}

TEST(Compare, PoisonIsDetectedAsUnwritten) {
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    HostTensor t(dtype, 4, 5);
    poison(t.view());
    std::vector<double> ref(20, 1.5);
    Comparison cmp = compare_to_reference(t.view(), ref);
    EXPECT_EQ(cmp.unwritten, 20);
    EXPECT_EQ(cmp.non_finite, 20);
    EXPECT_FALSE(cmp.ok(1e9));
    // Write all but one element: exactly that one is reported.
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 5; ++j) {
        if (i != 2 || j != 3) store_from_float(t.view(), i, j, 1.5f);
      }
    }
    cmp = compare_to_reference(t.view(), ref);
    EXPECT_EQ(cmp.unwritten, 1);
    EXPECT_EQ(cmp.non_finite, 1);
    EXPECT_FALSE(cmp.ok(1e9));
    EXPECT_TRUE(std::isinf(cmp.relative_frobenius_error));
  }
}

TEST(Compare, ComputedNansAndInfsAreNonFiniteButNotPoison) {
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    HostTensor t(dtype, 2, 2);
    const TensorView v = t.view();
    store_from_float(v, 0, 0, 1.0f);
    store_from_float(v, 0, 1, INFINITY - INFINITY);  // the NaN a computation makes
    store_from_float(v, 1, 0, INFINITY);
    store_from_float(v, 1, 1, 1.0f);
    const Comparison cmp = compare_to_reference(v, {1, 1, 1, 1});
    EXPECT_EQ(cmp.unwritten, 0);
    EXPECT_EQ(cmp.non_finite, 2);
    EXPECT_FALSE(cmp.ok(1e9));
  }
}

TEST(Compare, RelativeFrobeniusErrorValue) {
  HostTensor t(DType::fp32, 1, 2);
  t.set({3.0f, 4.5f});
  // ref = (3, 4): ||diff|| = 0.5, ||ref|| = 5.
  const Comparison cmp = compare_to_reference(t.view(), {3.0, 4.0});
  EXPECT_DOUBLE_EQ(cmp.relative_frobenius_error, 0.1);
  EXPECT_TRUE(cmp.ok(0.1));
  EXPECT_FALSE(cmp.ok(0.099));
}

TEST(Tolerance, AcceptsOutputRoundingAndRejectsARealError) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  EXPECT_LT(error_tolerance(DType::fp32), error_tolerance(DType::fp16));
  EXPECT_LT(error_tolerance(DType::fp16), error_tolerance(DType::bf16));
  std::normal_distribution<double> normal;
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    HostTensor t(dtype, 32, 32);
    std::vector<double> ref(32 * 32);
    for (double& x : ref) x = normal(rng) * 10;
    // Rounding the exact product to the output dtype passes...
    for (int i = 0; i < 32 * 32; ++i) store_from_float(t.view(), i / 32, i % 32, static_cast<float>(ref[static_cast<std::size_t>(i)]));
    EXPECT_TRUE(compare_to_reference(t.view(), ref).ok(error_tolerance(dtype)));
    // ...a few wrong elements (one output row of 32 off by 30%) fail.
    for (int j = 0; j < 32; ++j) {
      store_from_float(t.view(), 7, j, static_cast<float>(ref[static_cast<std::size_t>(7 * 32 + j)] * 1.3));
    }
    EXPECT_FALSE(compare_to_reference(t.view(), ref).ok(error_tolerance(dtype)));
  }
}

TEST(BitwiseEqualRows, ComparesExactlyAtAnOffset) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp32}) {
    HostTensor gathered(dtype, 12, 5), shard(dtype, 4, 5);
    shard.fill_normal(rng);
    gathered.fill_normal(rng);
    std::memcpy(static_cast<char*>(gathered.data()) + 8 * 5 * element_size(dtype), shard.data(),
                shard.bytes());
    EXPECT_TRUE(bitwise_equal_rows(gathered.view(), 8, shard.view()));
    EXPECT_FALSE(bitwise_equal_rows(gathered.view(), 4, shard.view()));
    // One flipped bit in the last element is a difference.
    static_cast<unsigned char*>(gathered.data())[gathered.bytes() - 1] ^= 0x01;
    EXPECT_FALSE(bitwise_equal_rows(gathered.view(), 8, shard.view()));
  }
}

}  // namespace
}  // namespace asynctp::core
