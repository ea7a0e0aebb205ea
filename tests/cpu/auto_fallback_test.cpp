// With auto, the planner falls back when native cannot run (m not a multiple
// of the tile, fp16/fp32, n or k not a multiple of 8); the call must say
// which algorithm it ran and why, and the result must still be right.
#include <gtest/gtest.h>

#include <string>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::make_shape;
using asynctp_test::Seed;
using asynctp_test::Shape;

struct AutoCase {
  const char* name;
  Shape shape;
  Algorithm expected;
  const char* reason_part;
};

void PrintTo(const AutoCase& c, std::ostream* out) { *out << c.name; }

class AutoFallback : public ::testing::TestWithParam<AutoCase> {};

TEST_P(AutoFallback, RunsTheFallbackCorrectlyAndSaysWhy) {
  const AutoCase& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  SCOPED_TRACE(c.shape.to_string());
  auto rng = seed.rng();
  // The environment must not decide for the planner here.
  asynctp_test::ScopedEnv algo("ASYNCTP_ALGO", std::nullopt);
  asynctp_test::ScopedEnv tile_m("ASYNCTP_TILE_M", std::nullopt);
  asynctp_test::ScopedEnv tile_n("ASYNCTP_TILE_N", std::nullopt);
  Options options;
  options.wait_timeout_ms = 10'000;
  cpu::Group group({c.shape.world, 2});
  FusedProblem problem(c.shape, rng);
  problem.poison_outputs();
  const auto outcomes =
      asynctp_test::run_collective(group, [&](Comm& comm) { return problem.call(comm, options); });
  asynctp_test::expect_all_ok(outcomes);
  for (const auto& out : outcomes) {
    EXPECT_EQ(out.info.algorithm, c.expected) << out.info.reason;
    EXPECT_NE(out.info.reason.find(c.reason_part), std::string::npos) << out.info.reason;
    if (c.expected != Algorithm::native) {
      EXPECT_NE(out.info.reason.find("native unavailable"), std::string::npos) << out.info.reason;
    }
  }
  problem.expect_all_correct();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AutoFallback,
    ::testing::Values(AutoCase{"m_not_tile_multiple_pipelined", make_shape(2, 136, 40, 64),
                               Algorithm::pipelined,
                               "m per rank (136) is not a multiple of the native tile M (256)"},
                      AutoCase{"m_not_tile_multiple_small_chunks", make_shape(4, 40, 24, 32),
                               Algorithm::decomposed, "chunks of 40 rows are below 128"},
                      AutoCase{"one_rank", make_shape(1, 40, 24, 32, DType::bf16, true),
                               Algorithm::decomposed, "one rank has nothing to overlap"},
                      AutoCase{"fp16", make_shape(2, 256, 24, 40, DType::fp16),
                               Algorithm::pipelined, "native needs bf16, got fp16"},
                      AutoCase{"fp32", make_shape(2, 256, 24, 40, DType::fp32, true),
                               Algorithm::pipelined, "native needs bf16, got fp32"},
                      AutoCase{"n_not_multiple_of_8", make_shape(2, 256, 12, 40),
                               Algorithm::pipelined, "n (12) is not a multiple of 8"},
                      AutoCase{"k_not_multiple_of_8", make_shape(2, 256, 16, 20),
                               Algorithm::pipelined, "k (20) is not a multiple of 8"}),
    [](const ::testing::TestParamInfo<AutoCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace asynctp
