// The API promises bf16/fp16 outputs rounded to nearest from fp32
// accumulators. The relative Frobenius tolerance cannot tell rounding from
// truncation (truncating bf16 costs ~3e-3, under the 4e-3 bound), so this
// checks each element against a rigorous bound instead:
//     |got - exact| <= ulp(x)/2 + gamma_k * sum_p |a_ip * b_pj|
// (half an output ulp for the final rounding, plus the worst case of fp32
// accumulation, whose products of bf16/fp16 inputs are exact in fp32).
// Truncation, or rounding twice, breaks it on about half the elements.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/dtype_convert.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::Seed;
using asynctp_test::Shape;

// The spacing of `dtype` values in the binade of |x| (the larger binade when
// x sits at a power of two, which only loosens the bound).
double ulp(DType dtype, double x) {
  const int mantissa_bits = dtype == DType::bf16 ? 7 : 10;
  const int min_exponent = dtype == DType::bf16 ? -126 : -14;
  const int e = std::max(static_cast<int>(std::floor(std::log2(std::max(std::fabs(x), 1e-300)))),
                         min_exponent);
  return std::ldexp(1.0, e - mantissa_bits);
}

struct RoundingCase {
  Algorithm algorithm;
  DType dtype;
};

void PrintTo(const RoundingCase& c, std::ostream* out) {
  *out << to_string(c.algorithm) << " " << to_string(c.dtype);
}

class Rounding : public ::testing::TestWithParam<RoundingCase> {};

TEST_P(Rounding, EveryOutputIsTheNearestValueUpToAccumulationError) {
  const RoundingCase& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Shape shape;
  shape.world = 2;
  shape.m = 32;
  shape.n = 48;
  shape.k = 64;
  shape.dtype = c.dtype;
  Options options;
  options.algorithm = c.algorithm;
  options.tile_m = 16;
  options.tile_n = 16;
  options.wait_timeout_ms = 10'000;
  cpu::Group group({shape.world, 2});
  FusedProblem problem(shape, rng);
  problem.poison_outputs();
  const auto outcomes = asynctp_test::run_collective(
      group, [&](Comm& comm) { return problem.call(comm, options); });
  asynctp_test::expect_all_ok(outcomes);
  problem.expect_all_correct();

  const double gamma = 1.01 * static_cast<double>(shape.k) * std::ldexp(1.0, -24);
  for (int r = 0; r < shape.world; ++r) {
    const std::vector<double>& exact = problem.reference(r);
    const TensorView b = problem.b(r);
    int violations = 0;
    for (std::int64_t i = 0; i < shape.world * shape.m; ++i) {
      const TensorView a = problem.a(static_cast<int>(i / shape.m));
      const std::int64_t ai = i % shape.m;
      for (std::int64_t j = 0; j < shape.n; ++j) {
        double abs_sum = 0;
        for (std::int64_t p = 0; p < shape.k; ++p) {
          abs_sum += std::fabs(core::load_as_double(a, ai, p) * core::load_as_double(b, p, j));
        }
        const double want = exact[static_cast<std::size_t>(i * shape.n + j)];
        const double got = core::load_as_double(problem.c(r), i, j);
        const double bound = 0.5 * ulp(c.dtype, std::max(std::fabs(got), std::fabs(want))) +
                             gamma * abs_sum;
        if (!(std::fabs(got - want) <= bound) && ++violations <= 3) {
          ADD_FAILURE() << "rank " << r << " C(" << i << ", " << j << ") = " << got
                        << ", exact " << want << ": off by " << std::fabs(got - want)
                        << " > bound " << bound;
        }
      }
    }
    EXPECT_EQ(violations, 0) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, Rounding,
    ::testing::Values(RoundingCase{Algorithm::native, DType::bf16},
                      RoundingCase{Algorithm::pipelined, DType::bf16},
                      RoundingCase{Algorithm::decomposed, DType::bf16},
                      RoundingCase{Algorithm::pipelined, DType::fp16},
                      RoundingCase{Algorithm::decomposed, DType::fp16}),
    [](const ::testing::TestParamInfo<RoundingCase>& info) {
      return std::string(to_string(info.param.algorithm)) + "_" + to_string(info.param.dtype);
    });

}  // namespace
}  // namespace asynctp
