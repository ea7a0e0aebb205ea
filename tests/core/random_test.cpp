// verify::Random: a counter-based stream of N(0, 1) draws, so that a
// problem's inputs are the same however many threads draw them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/verify.hpp"

namespace asynctp::verify {
namespace {

std::vector<float> draws(Random random, std::int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  random.fill_normal(TensorView::row_major(values.data(), DType::fp32, 1, count));
  return values;
}

TEST(VerifyRandom, DrawsLookStandardNormal) {
  const std::int64_t count = 1 << 20;
  const std::vector<float> values = draws(Random(7, 3), count);
  double sum = 0, squares = 0;
  std::int64_t beyond_two_sigma = 0;
  for (const float v : values) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    squares += double{v} * v;
    beyond_two_sigma += std::fabs(v) > 2.0f;
  }
  // Mean and variance of 2^20 N(0, 1) draws: standard errors 1e-3 and 1.4e-3;
  // the bounds are over 6 of them. P(|z| > 2) = 0.0455, standard error 2e-4.
  EXPECT_NEAR(sum / count, 0.0, 6e-3);
  EXPECT_NEAR(squares / count, 1.0, 1e-2);
  EXPECT_NEAR(static_cast<double>(beyond_two_sigma) / count, 0.0455, 2e-3);
}

TEST(VerifyRandom, SeedsAndStreamsGiveUnrelatedDraws) {
  const std::vector<float> base = draws(Random(1, 0), 1000);
  for (const auto& other : {draws(Random(1, 1), 1000), draws(Random(2, 0), 1000)}) {
    int equal = 0;
    double product = 0;
    for (std::size_t i = 0; i < base.size(); ++i) {
      equal += base[i] == other[i];
      product += double{base[i]} * other[i];
    }
    EXPECT_LT(equal, 5);
    // Correlation of 1000 independent pairs: standard error ~0.03.
    EXPECT_LT(std::fabs(product / 1000), 0.2);
  }
  EXPECT_EQ(draws(Random(1, 0), 1000), base);  // the same seed, the same draws
}

TEST(VerifyRandom, ConsecutiveFillsContinueTheStream) {
  const std::vector<float> whole = draws(Random(11, 5), 1001);
  Random random(11, 5);
  std::vector<float> first(333), second(668);
  random.fill_normal(TensorView::row_major(first.data(), DType::fp32, 1, 333));
  random.fill_normal(TensorView::row_major(second.data(), DType::fp32, 1, 668));
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(first, whole);
}

TEST(VerifyRandom, PartsInAnyOrderMatchOneFill) {
  const std::int64_t count = 1001;
  const std::vector<float> whole = draws(Random(3, 9), count);
  Random random(3, 9);
  std::vector<float> parts(static_cast<std::size_t>(count), NAN);
  const TensorView view = TensorView::row_major(parts.data(), DType::fp32, 7, 143);
  // Odd starts and ends (a draw pair split between parts), back to front.
  for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{700, 1001},
                                   {3, 700},
                                   {1, 3},
                                   {0, 1}}) {
    random.fill_normal_part(view, begin, end);
  }
  EXPECT_EQ(parts, whole);
  random.skip(count);  // then on, as fill_normal would have gone on
  const std::vector<float> longer = draws(Random(3, 9), count + 10);
  EXPECT_EQ(draws(random, 10), std::vector<float>(longer.begin() + count, longer.end()));
}

TEST(VerifyRandom, Bf16DrawsAreTheFp32DrawsRounded) {
  const std::vector<float> fp32 = draws(Random(5, 2), 256);
  std::vector<std::uint16_t> bf16(256);
  Random(5, 2).fill_normal(TensorView::row_major(bf16.data(), DType::bf16, 16, 16));
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    const std::uint32_t bits = std::uint32_t{bf16[i]} << 16;
    float rounded;
    std::memcpy(&rounded, &bits, sizeof rounded);
    EXPECT_LE(std::fabs(rounded - fp32[i]), std::fabs(fp32[i]) * 0x1p-8f) << i;
  }
}

TEST(VerifyRandom, PartOutsideTheTensorIsRefusedByName) {
  std::vector<float> values(10);
  const TensorView view = TensorView::row_major(values.data(), DType::fp32, 2, 5);
  const Random random(1, 1);
  for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{-1, 3},
                                   {4, 3},
                                   {0, 11}}) {
    try {
      random.fill_normal_part(view, begin, end);
      ADD_FAILURE() << "accepted [" << begin << ", " << end << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("fill_normal_part: [begin, end) must lie in [0, 10]"),
                std::string::npos)
          << e.what();
    }
  }
}

// A problem's inputs, drawn in blocks on every hardware thread, are each
// rank's stream in the inputs' order, as one thread per rank would draw it.
TEST(VerifyRandom, AProblemsInputsAreEachRanksStreamInOrder) {
  ProblemShape shape;
  shape.world_size = 3;
  shape.m = 700;  // A shard 700 x 1600 and B 1600 x 900: over 2^20 each
  shape.n = 900;
  shape.k = 1600;
  const std::uint64_t seed = 1234;
  const AllGatherMatmulProblem problem(shape, seed);
  for (int r = 0; r < shape.world_size; ++r) {
    Random random(seed, static_cast<std::uint64_t>(r));
    for (const RankTensors::Named& input : problem.tensors(r).inputs) {
      const TensorView& view = input.view;
      std::vector<std::uint16_t> expected(static_cast<std::size_t>(view.numel()));
      TensorView copy = view;
      copy.data = expected.data();
      random.fill_normal(copy);
      EXPECT_EQ(std::memcmp(view.data, expected.data(), expected.size() * sizeof(std::uint16_t)), 0)
          << "rank " << r << ", " << input.name;
    }
  }
}

}  // namespace
}  // namespace asynctp::verify
