// Narrowing conversions must round to nearest, ties to even, exactly like the
// GPU's cvt.rn, so CPU and GPU outputs agree bit for bit. The brute-force
// checks use an independent oracle (binary search over the representable
// values, decoded with ldexp) rather than re-deriving the bit tricks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype_convert.hpp"
#include "support/host_tensor.hpp"
#include "support/seed.hpp"

namespace asynctp::core {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::Seed;

float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t to_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

bool bf16_is_nan(std::uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }
bool fp16_is_nan(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Independent decoders of non-negative finite patterns. The all-ones exponent
// with zero mantissa (inf) decodes to the first power of two past the largest
// finite value, which is where IEEE rounding places the overflow boundary.
double bf16_magnitude(std::uint16_t h) {
  const int e = (h >> 7) & 0xff;
  const int f = h & 0x7f;
  if (e == 0) return std::ldexp(f, -133);  // subnormal: f * 2^(-126-7)
  return std::ldexp(128 + f, e - 127 - 7);
}
double fp16_magnitude(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int f = h & 0x3ff;
  if (e == 0) return std::ldexp(f, -24);
  return std::ldexp(1024 + f, e - 15 - 10);
}

// The nearest representable pattern to x (ties to the even pattern),
// searching the monotone sequence of non-negative patterns [0, inf].
std::uint16_t oracle(double x, std::uint16_t inf_bits, std::uint16_t sign_bit,
                     double (*magnitude)(std::uint16_t)) {
  const std::uint16_t sign = std::signbit(x) ? sign_bit : 0;
  const double a = std::fabs(x);
  if (a >= magnitude(inf_bits)) return sign | inf_bits;
  std::uint32_t lo = 0, hi = inf_bits;  // magnitude(lo) <= a < magnitude(hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (magnitude(static_cast<std::uint16_t>(mid)) <= a) lo = mid; else hi = mid;
  }
  const double below = a - magnitude(static_cast<std::uint16_t>(lo));
  const double above = magnitude(static_cast<std::uint16_t>(hi)) - a;
  std::uint32_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<std::uint16_t>(sign | pick);
}
std::uint16_t bf16_oracle(float x) { return oracle(x, 0x7f80, 0x8000, bf16_magnitude); }
std::uint16_t fp16_oracle(float x) { return oracle(x, 0x7c00, 0x8000, fp16_magnitude); }

// Inputs concentrated where rounding decisions happen: random normals at
// many scales, exact ties (the midpoint of two neighbours) and ties +- 1 ulp
// of fp32, and raw random bit patterns.
template <typename Check>
void for_many_floats(std::mt19937_64& rng, double (*magnitude)(std::uint16_t), int max_exp,
                     int min_exp, Check check) {
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_int_distribution<int> pattern(1, 0x7bff);
  for (int i = 0; i < 200000; ++i) {
    check(std::ldexp(normal(rng), exponent(rng)));
    const float raw = from_bits(bits(rng));
    if (!std::isnan(raw)) check(raw);
    // A tie between neighbouring patterns p and p+1, if fp32 can hold it.
    const auto p = static_cast<std::uint16_t>(pattern(rng));
    const double mid = (magnitude(p) + magnitude(static_cast<std::uint16_t>(p + 1))) / 2;
    const float tie = static_cast<float>(mid);
    if (static_cast<double>(tie) == mid) {
      check(tie);
      check(-tie);
      check(std::nextafter(tie, 0.0f));
      check(std::nextafter(tie, INFINITY));
    }
  }
}

TEST(Bf16, RoundsToNearestEvenLikeBruteForceOracle) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  int mismatches = 0;
  for_many_floats(rng, bf16_magnitude, 127, -140, [&](float x) {
    const std::uint16_t got = float_to_bf16(x);
    const std::uint16_t want = bf16_oracle(x);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "float_to_bf16(" << x << " bits 0x" << std::hex << to_bits(x) << ") = 0x"
                    << got << ", nearest-even is 0x" << want;
    }
  });
  EXPECT_EQ(mismatches, 0);
}

TEST(Fp16, RoundsToNearestEvenLikeBruteForceOracle) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  int mismatches = 0;
  // Exponents span subnormals (below 2^-14) through overflow (above 2^16).
  for_many_floats(rng, fp16_magnitude, 17, -27, [&](float x) {
    const std::uint16_t got = float_to_fp16(x);
    const std::uint16_t want = fp16_oracle(x);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "float_to_fp16(" << x << " bits 0x" << std::hex << to_bits(x) << ") = 0x"
                    << got << ", nearest-even is 0x" << want;
    }
  });
  EXPECT_EQ(mismatches, 0);
}

TEST(Bf16, TiesGoToEvenInBothDirections) {
  // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81).
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3*2^-8 lies halfway between 0x3f81 (odd) and 0x3f82 (even): rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  // Just above / below a tie is not a tie.
  EXPECT_EQ(float_to_bf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::nextafter(1.0f + 3 * 0x1p-8f, 0.0f)), 0x3f81);
  // Negative values mirror the positive ones.
  EXPECT_EQ(float_to_bf16(-(1.0f + 0x1p-8f)), 0xbf80);
  EXPECT_EQ(float_to_bf16(-(1.0f + 3 * 0x1p-8f)), 0xbf82);
  EXPECT_EQ(float_to_bf16(-1.5f), 0xbfc0);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, OverflowInfinityAndNan) {
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  // The largest float is past the midpoint of bf16's max (0x7f7f) and 2^128.
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x7f7f7fffu)), 0x7f7f);  // below the midpoint
  EXPECT_EQ(float_to_bf16(from_bits(0x7f7f8000u)), 0x7f80);  // the midpoint: odd max -> inf
  // NaNs stay NaN, including signalling NaNs whose payload sits in the low
  // 16 bits (plain truncation would turn them into infinity).
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(std::nanf(""))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(from_bits(0x7f800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(from_bits(0xff800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(from_bits(0x7fffffffu))));
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7fc0)));
  EXPECT_EQ(bf16_to_float(0x7f80), INFINITY);
}

TEST(Fp16, TiesNegativesOverflowAndSpecials) {
  EXPECT_EQ(float_to_fp16(1.0f + 0x1p-11f), 0x3c00);      // tie, down to even
  EXPECT_EQ(float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie, up to even
  EXPECT_EQ(float_to_fp16(-(1.0f + 3 * 0x1p-11f)), 0xbc02);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);  // the largest finite fp16
  EXPECT_EQ(float_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);  // halfway to 2^16, odd max -> inf
  EXPECT_EQ(float_to_fp16(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_fp16(1e6f), 0x7c00);
  EXPECT_EQ(float_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_fp16(-INFINITY), 0xfc00);
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(std::nanf(""))));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(-std::nanf(""))));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(from_bits(0x7f800001u))));  // payload only in low bits
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7e00)));
  EXPECT_EQ(fp16_to_float(0x7c00), INFINITY);
  EXPECT_EQ(fp16_to_float(0xfc00), -INFINITY);
}

TEST(Fp16, Subnormals) {
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);       // smallest subnormal
  EXPECT_EQ(float_to_fp16(-0x1p-24f), 0x8001);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);       // tie between 0 and 1 ulp: even 0
  EXPECT_EQ(float_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_fp16(3 * 0x1p-25f), 0x0002);   // tie between 1 and 2 ulps: even 2
  EXPECT_EQ(float_to_fp16(5 * 0x1p-25f), 0x0002);   // tie between 2 and 3 ulps: even 2
  EXPECT_EQ(float_to_fp16(0x3ff * 0x1p-24f), 0x03ff);  // largest subnormal
  // Halfway between the largest subnormal (odd) and the smallest normal.
  EXPECT_EQ(float_to_fp16(0x1p-14f - 0x1p-25f), 0x0400);
  EXPECT_EQ(float_to_fp16(0x1p-14f), 0x0400);
  EXPECT_EQ(float_to_fp16(1e-10f), 0x0000);
  EXPECT_EQ(float_to_fp16(-1e-10f), 0x8000);
  EXPECT_EQ(fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_float(0x83ff), -0x3ff * 0x1p-24f);
}

// Every one of the 65536 patterns widens exactly and narrows back to itself.
TEST(Bf16, EveryPatternRoundTripsExactly) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = bf16_to_float(bits);
    if (bf16_is_nan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(bf16_is_nan(float_to_bf16(f))) << std::hex << h;
      continue;
    }
    const double want = (bits & 0x7fff) == 0x7f80 ? INFINITY : bf16_magnitude(bits & 0x7fff);
    ASSERT_EQ(static_cast<double>(std::fabs(f)), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (bits & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(float_to_bf16(f), bits) << std::hex << h;
  }
}

TEST(Fp16, EveryPatternRoundTripsExactly) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = fp16_to_float(bits);
    if (fp16_is_nan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(fp16_is_nan(float_to_fp16(f))) << std::hex << h;
      continue;
    }
    const double want = (bits & 0x7fff) == 0x7c00 ? INFINITY : fp16_magnitude(bits & 0x7fff);
    ASSERT_EQ(static_cast<double>(std::fabs(f)), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (bits & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(float_to_fp16(f), bits) << std::hex << h;
  }
}

// The block helpers honour strides and round like the scalar conversions.
TEST(BlockConversion, RowsToFloatReadsAnyLayoutAndDtype) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (bool col_major : {false, true}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (col_major ? " col" : " row"));
      HostTensor t(dtype, 13, 7, col_major);
      t.fill_normal(rng);
      const TensorView v = t.view();
      std::vector<float> out(static_cast<std::size_t>(5 * 7), NAN);
      rows_to_float(v, 4, 5, out.data());
      for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 7; ++j) {
          const std::int64_t off = (4 + i) * v.row_stride + j * v.col_stride;
          float want = 0;
          if (dtype == DType::fp32) {
            want = static_cast<const float*>(v.data)[off];
          } else {
            const std::uint16_t h = static_cast<const std::uint16_t*>(v.data)[off];
            want = dtype == DType::bf16 ? bf16_to_float(h) : fp16_to_float(h);
          }
          ASSERT_EQ(out[static_cast<std::size_t>(i * 7 + j)], want) << i << "," << j;
          ASSERT_EQ(load_as_double(v, 4 + i, j), static_cast<double>(want));
        }
      }
    }
  }
}

TEST(BlockConversion, FloatBlockToViewRoundsAndTouchesOnlyTheBlock) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  std::normal_distribution<float> normal;
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    SCOPED_TRACE(to_string(dtype));
    HostTensor dst(dtype, 9, 11);
    dst.fill_bytes(0x5a);
    const auto before = dst.snapshot();
    // A 4x5 block with leading dimension 6 (one padding column) at (3, 2).
    std::vector<float> src(4 * 6);
    for (float& x : src) x = normal(rng) * 100.0f;
    const TensorView v = dst.view();
    float_block_to_view(src.data(), 4, 5, 6, v, 3, 2);
    const std::size_t esize = element_size(dtype);
    const auto* bytes = static_cast<const unsigned char*>(dst.data());
    for (int i = 0; i < 9; ++i) {
      for (int j = 0; j < 11; ++j) {
        const std::size_t off = static_cast<std::size_t>(i * 11 + j) * esize;
        const bool inside = i >= 3 && i < 7 && j >= 2 && j < 7;
        if (!inside) {
          ASSERT_EQ(0, std::memcmp(bytes + off, before.data() + off, esize)) << i << "," << j;
          continue;
        }
        const float x = src[static_cast<std::size_t>((i - 3) * 6 + (j - 2))];
        const double want = dtype == DType::bf16   ? bf16_to_float(float_to_bf16(x))
                            : dtype == DType::fp16 ? fp16_to_float(float_to_fp16(x))
                                                   : x;
        ASSERT_EQ(load_as_double(v, i, j), want) << i << "," << j;
      }
    }
  }
}

}  // namespace
}  // namespace asynctp::core
