// The planner through the public API: plan_fused_all_gather_matmul predicts
// exactly what the call then reports, writes nothing, and the ASYNCTP_ALGO
// and ASYNCTP_TILE_* environment variables steer it unless Options decide.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::make_shape;
using asynctp_test::ScopedEnv;
using asynctp_test::Seed;
using asynctp_test::Shape;

RunInfo plan_on(cpu::Group& group, int rank, const FusedProblem& p, const Options& options) {
  const TensorView g = p.g(rank);
  return plan_fused_all_gather_matmul(group.comm(rank), p.a(rank), p.b(rank), p.c(rank),
                                      p.shape().gathered ? &g : nullptr, options);
}

// Runs the collective and checks that each rank's RunInfo equals its plan.
void expect_plan_matches_run(FusedProblem& problem, const Options& options, Algorithm expected) {
  cpu::Group group({problem.world(), 2});
  std::vector<RunInfo> plans;
  for (int r = 0; r < problem.world(); ++r) plans.push_back(plan_on(group, r, problem, options));
  problem.poison_outputs();
  const auto outcomes =
      asynctp_test::run_collective(group, [&](Comm& comm) { return problem.call(comm, options); });
  asynctp_test::expect_all_ok(outcomes);
  for (int r = 0; r < problem.world(); ++r) {
    const RunInfo& plan = plans[static_cast<std::size_t>(r)];
    const RunInfo& ran = outcomes[static_cast<std::size_t>(r)].info;
    EXPECT_EQ(plan.algorithm, expected) << plan.reason;
    EXPECT_EQ(ran.algorithm, plan.algorithm);
    EXPECT_EQ(ran.tile_m, plan.tile_m);
    EXPECT_EQ(ran.tile_n, plan.tile_n);
    EXPECT_EQ(ran.reason, plan.reason);
  }
  problem.expect_all_correct();
}

TEST(PlannerApi, PlanPredictsTheRun) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv env;
  Options native_tiles;
  native_tiles.tile_m = 16;
  native_tiles.tile_n = 24;
  const struct {
    Shape shape;
    Options options;
    Algorithm expected;
  } cases[] = {
      {make_shape(2, 32, 40, 24), native_tiles, Algorithm::native},
      {make_shape(2, 136, 40, 24), {}, Algorithm::pipelined},
      {make_shape(4, 20, 12, 24, DType::fp16), {}, Algorithm::decomposed},
      {make_shape(1, 32, 40, 24), native_tiles, Algorithm::decomposed},  // one rank
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string());
    FusedProblem problem(c.shape, rng);
    expect_plan_matches_run(problem, c.options, c.expected);
  }
}

TEST(PlannerApi, PlanWritesNothingAndIsLocal) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv env;
  FusedProblem problem(make_shape(4, 32, 16, 16), rng);
  problem.poison_outputs();
  const auto before_c = problem.c_tensor(2).snapshot();
  const auto before_g = problem.g_tensor(2).snapshot();
  cpu::Group group({4, 2});
  // Only rank 2 plans; a collective would wait for the others.
  const RunInfo info = plan_on(group, 2, problem, {});
  EXPECT_EQ(info.algorithm, Algorithm::decomposed) << info.reason;
  EXPECT_TRUE(problem.c_tensor(2).equals(before_c));
  EXPECT_TRUE(problem.g_tensor(2).equals(before_g));
}

TEST(PlannerApi, PlanRejectsWhatTheCallWouldReject) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv env;
  FusedProblem problem(make_shape(2, 20, 16, 16), rng);
  cpu::Group group({2, 2});
  TensorView bad_c = problem.c(0);
  bad_c.rows -= 1;
  try {
    plan_fused_all_gather_matmul(group.comm(0), problem.a(0), problem.b(0), bad_c, nullptr);
    ADD_FAILURE() << "planned a call with a wrong c_out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("c_out"), std::string::npos) << e.what();
  }
  Options native;
  native.algorithm = Algorithm::native;  // m = 20 is not a multiple of 256
  try {
    plan_on(group, 0, problem, native);
    ADD_FAILURE() << "planned forced native where it cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("not a multiple of the native tile M (256)"),
              std::string::npos)
        << e.what();
  }
}

TEST(PlannerApi, EnvironmentSelectsTheAlgorithm) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean;
  // Without the environment this problem runs native (tile 16 from options).
  Options tiles;
  tiles.tile_m = 16;
  for (const char* forced : {"decomposed", "pipelined"}) {
    SCOPED_TRACE(forced);
    ScopedEnv env("ASYNCTP_ALGO", forced);
    FusedProblem problem(make_shape(2, 32, 24, 16), rng);
    expect_plan_matches_run(problem, tiles, parse_algorithm(forced, "test"));
  }
  {
    ScopedEnv env("ASYNCTP_ALGO", "auto");
    FusedProblem problem(make_shape(2, 32, 24, 16), rng);
    expect_plan_matches_run(problem, tiles, Algorithm::native);
  }
}

TEST(PlannerApi, EnvironmentSetsTheTile) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean;
  ScopedEnv tile_m("ASYNCTP_TILE_M", "16");
  ScopedEnv tile_n("ASYNCTP_TILE_N", "8");
  FusedProblem problem(make_shape(2, 48, 24, 16), rng);
  expect_plan_matches_run(problem, {}, Algorithm::native);
  cpu::Group group({2, 2});
  const RunInfo info = plan_on(group, 0, problem, {});
  EXPECT_EQ(info.tile_m, 16);
  EXPECT_EQ(info.tile_n, 8);
}

TEST(PlannerApi, OptionsBeatTheEnvironment) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean;
  ScopedEnv env("ASYNCTP_ALGO", "decomposed");
  Options options;
  options.algorithm = Algorithm::native;
  options.tile_m = 16;
  FusedProblem problem(make_shape(2, 32, 24, 16), rng);
  expect_plan_matches_run(problem, options, Algorithm::native);
  options.algorithm = Algorithm::pipelined;
  expect_plan_matches_run(problem, options, Algorithm::pipelined);
}

TEST(PlannerApi, InvalidEnvironmentFailsEveryRankNamingTheVariable) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean;
  ScopedEnv env("ASYNCTP_ALGO", "fastest");
  FusedProblem problem(make_shape(2, 16, 8, 8), rng);
  problem.poison_outputs();
  cpu::Group group({2, 2});
  const auto outcomes =
      asynctp_test::run_collective(group, [&](Comm& comm) { return problem.call(comm, {}); });
  for (const auto& out : outcomes) {
    EXPECT_FALSE(out.ok);
    EXPECT_EQ(out.code, ErrorCode::invalid_argument) << out.message;
    EXPECT_NE(out.message.find("ASYNCTP_ALGO"), std::string::npos) << out.message;
    EXPECT_NE(out.message.find("fastest"), std::string::npos) << out.message;
  }
}

}  // namespace
}  // namespace asynctp
