// The reduce-scatter's planner through the public API:
// plan_fused_matmul_reduce_scatter predicts exactly what the call then
// reports (algorithm, tiles, reason), writes nothing, rejects what the call
// would reject, and ASYNCTP_ALGO / ASYNCTP_TILE_* steer it unless Options
// decide.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::ReduceScatterProblem;
using asynctp_test::rs_shape;
using asynctp_test::RsShape;
using asynctp_test::ScopedEnv;
using asynctp_test::Seed;

RunInfo plan_on(cpu::Group& group, int rank, const ReduceScatterProblem& p,
                const Options& options) {
  return plan_fused_matmul_reduce_scatter(group.comm(rank), p.a(rank), p.b(rank), p.out(rank),
                                          options);
}

void expect_plan_matches_run(ReduceScatterProblem& problem, const Options& options,
                             Algorithm expected, const std::string& reason_part) {
  cpu::Group group({problem.world(), 2});
  std::vector<RunInfo> plans;
  for (int r = 0; r < problem.world(); ++r) plans.push_back(plan_on(group, r, problem, options));
  const auto outcomes = asynctp_test::run_and_check(group, problem, options);
  for (int r = 0; r < problem.world(); ++r) {
    const RunInfo& plan = plans[static_cast<std::size_t>(r)];
    const RunInfo& ran = outcomes[static_cast<std::size_t>(r)].info;
    EXPECT_EQ(plan.algorithm, expected) << plan.reason;
    EXPECT_NE(plan.reason.find(reason_part), std::string::npos) << plan.reason;
    EXPECT_EQ(ran.algorithm, plan.algorithm);
    EXPECT_EQ(ran.tile_m, plan.tile_m);
    EXPECT_EQ(ran.tile_n, plan.tile_n);
    EXPECT_EQ(ran.reason, plan.reason);
  }
}

TEST(ReduceScatterPlannerApi, PlanPredictsTheRunWithItsReason) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv env;
  Options tiles;
  tiles.tile_m = 16;
  tiles.tile_n = 24;
  const struct {
    RsShape shape;
    Options options;
    Algorithm expected;
    const char* reason;
  } cases[] = {
      {rs_shape(3, 32, 40, 24), tiles, Algorithm::native,
       "rows per chunk (M/W = 32) is a multiple"},
      {rs_shape(2, 136, 40, 24),
       {},
       Algorithm::pipelined,
       "overlap the shipping of finished partials"},
      {rs_shape(4, 20, 12, 24, DType::fp16), {}, Algorithm::decomposed, "native needs bf16"},
      {rs_shape(1, 32, 40, 24), tiles, Algorithm::decomposed, "one rank has nothing to overlap"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string());
    ReduceScatterProblem problem(c.shape, rng);
    expect_plan_matches_run(problem, c.options, c.expected, c.reason);
  }
}

TEST(ReduceScatterPlannerApi, PlanWritesNothingAndRejectsWhatTheCallWould) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv env;
  ReduceScatterProblem problem(rs_shape(4, 20, 16, 16), rng);
  problem.poison_outputs();
  const auto before = problem.out_tensor(2).snapshot();
  cpu::Group group({4, 2});
  // Only rank 2 plans; a collective would wait for the others.
  EXPECT_EQ(plan_on(group, 2, problem, {}).algorithm, Algorithm::decomposed);
  EXPECT_TRUE(problem.out_tensor(2).equals(before));

  TensorView bad_out = problem.out(0);
  bad_out.rows += 1;
  try {
    plan_fused_matmul_reduce_scatter(group.comm(0), problem.a(0), problem.b(0), bad_out);
    ADD_FAILURE() << "planned a call with a wrong out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("out: shape must be"), std::string::npos) << e.what();
  }
  Options native;
  native.algorithm = Algorithm::native;  // 20 rows per chunk: not a multiple of 256
  try {
    plan_on(group, 0, problem, native);
    ADD_FAILURE() << "planned forced native where it cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("rows per chunk (M/W = 20) is not a multiple of the "
                                         "native tile M (256)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReduceScatterPlannerApi, EnvironmentSelectsAlgorithmAndTilesUnlessOptionsDo) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean;
  Options tiles;
  tiles.tile_m = 16;
  for (const char* forced : {"decomposed", "pipelined"}) {
    SCOPED_TRACE(forced);
    ScopedEnv env("ASYNCTP_ALGO", forced);
    ReduceScatterProblem problem(rs_shape(2, 32, 24, 16), rng);
    expect_plan_matches_run(problem, tiles, parse_algorithm(forced, "test"), "forced");
    Options over = tiles;
    over.algorithm = Algorithm::native;
    expect_plan_matches_run(problem, over, Algorithm::native, "forced");
  }
  ScopedEnv tile_m("ASYNCTP_TILE_M", "16");
  ScopedEnv tile_n("ASYNCTP_TILE_N", "8");
  ReduceScatterProblem problem(rs_shape(2, 48, 24, 16), rng);
  expect_plan_matches_run(problem, {}, Algorithm::native, "multiple of tile M 16");
  cpu::Group group({2, 2});
  EXPECT_EQ(plan_on(group, 0, problem, {}).tile_n, 8);
}

}  // namespace
}  // namespace asynctp
