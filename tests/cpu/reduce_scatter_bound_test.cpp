// The reduce-scatter's elementwise error bound on real runs of the CPU
// backend: a draw whose partials the former statistical tolerance rejected
// passes (the bound follows the data: few elements, partials that cancel),
// and the check still rejects, by a wide margin, an out judged against a
// reference that misses one rank's partial or counts it twice.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "asynctp/verify.hpp"
#include "core/dtype_convert.hpp"
#include "core/reference.hpp"
#include "support/collective.hpp"
#include "support/host_tensor.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::ReduceScatterProblem;
using asynctp_test::RsShape;
using asynctp_test::Seed;

// The shape and inputs the seeded correctness case
// decomposed_W6_bf16_bcol drew from ASYNCTP_TEST_SEED=3943556142435774832:
// W = 6, m = 1 (six elements per rank, n = 6), relative error 0.026 where
// the statistical tolerance allowed 0.0137.
TEST(ReduceScatterBound, TheDrawTheStatisticalToleranceRejectedPasses) {
  const std::string label =
      "AllAlgorithms/ReduceScatterCorrectness.MatchesFloat64ReferenceOnEveryRank/"
      "decomposed_W6_bf16_bcol";
  std::mt19937_64 rng(asynctp_test::splitmix64(3943556142435774832ull ^
                                               std::hash<std::string>{}(label)));
  // draw_shape of the correctness test, for a non-native case.
  RsShape shape;
  shape.world = 6;
  shape.dtype = DType::bf16;
  shape.b_col_major = true;
  shape.m = asynctp_test::draw(rng, 1, 40);
  shape.n = asynctp_test::draw(rng, 1, 90);
  for (int r = 0; r < shape.world; ++r) shape.k.push_back(asynctp_test::draw(rng, 1, 100));
  SCOPED_TRACE(shape.to_string());
  Options options;
  options.algorithm = Algorithm::decomposed;
  options.wait_timeout_ms = 10'000;
  cpu::Group group({shape.world, 2});
  ReduceScatterProblem problem(shape, rng);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) problem.refill(rng);
    asynctp_test::run_and_check(group, problem, options);
    for (int r = 0; r < shape.world; ++r) {
      const verify::Verdict v = problem.verdict(r);
      std::printf("  round %d rank %d: rel. error %.3g, bound's %.3g\n", round, r,
                  v.relative_error, v.tolerance);
    }
  }
}

// A copy of `b` with every element times `factor` (0 or 2: exact).
HostTensor scaled(const TensorView& b, float factor) {
  HostTensor copy(b.dtype, b.rows, b.cols, b.col_stride != 1);
  for (std::int64_t i = 0; i < b.rows; ++i) {
    for (std::int64_t j = 0; j < b.cols; ++j) {
      core::store_from_float(copy.view(), i, j,
                             factor * static_cast<float>(core::load_as_double(b, i, j)));
    }
  }
  return copy;
}

TEST(ReduceScatterBound, AMissingOrDoubledPartialFailsByAWideMargin) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (Algorithm algorithm : {Algorithm::pipelined, Algorithm::decomposed}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + to_string(algorithm));
      const RsShape shape = asynctp_test::rs_shape(4, 16, 24, 48, dtype, false);
      Options options;
      options.algorithm = algorithm;
      options.wait_timeout_ms = 10'000;
      cpu::Group group({shape.world, 2});
      ReduceScatterProblem problem(shape, rng);
      asynctp_test::run_and_check(group, problem, options);  // the run itself is right
      const int wrong = asynctp_test::draw(rng, 0, shape.world - 1);
      for (float factor : {0.0f, 2.0f}) {
        SCOPED_TRACE("rank " + std::to_string(wrong) + "'s partial times " +
                     std::to_string(factor));
        const HostTensor b_wrong = scaled(problem.b(wrong), factor);
        std::vector<TensorView> as, bs;
        for (int s = 0; s < shape.world; ++s) {
          as.push_back(problem.a(s));
          bs.push_back(s == wrong ? b_wrong.view() : problem.b(s));
        }
        for (int r = 0; r < shape.world; ++r) {
          const verify::ReduceScatterReference ref = verify::reference_matmul_reduce_scatter(as, bs, r);
          const verify::Verdict v = verify::check_matmul_reduce_scatter(problem.out(r), ref);
          EXPECT_FALSE(v.ok) << "rank " << r;
          EXPECT_NE(v.failure.find("beyond their error bound"), std::string::npos) << v.failure;
          const auto cmp = core::compare_within_bound(
              problem.out(r), ref.value,
              verify::reduce_scatter_error_bound(ref, dtype, verify::PartialSum::fp32));
          // Most elements, and the worst by far more than rounding could.
          EXPECT_GT(cmp.beyond, shape.m * shape.n / 2) << "rank " << r;
          EXPECT_GT(cmp.worst_ratio, 10) << "rank " << r;
          EXPECT_GT(v.relative_error, 5 * v.tolerance) << "rank " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace asynctp
