// Uneven K-slices under auto: each rank plans from its own k, so one rank's
// planner can choose native (its k a multiple of 8) and another's not. The
// ranks asked for the same thing (auto) and the op allows uneven K, so the
// call runs: the group runs the most ambitious algorithm every rank can run
// (core/agreement.hpp, agreed_plan), and the ranks whose planner chose
// otherwise say so in their reason. Found by the stress runner (tests/stress),
// where the agreement used to fail such calls as a mismatch.
#include <gtest/gtest.h>

#include <string>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `shape` under auto on every rank, checks every output against
// the reference, and that every rank ran `expected`; rank `preferring`'s
// planner chose native, and its reason says the group chose otherwise.
// (Auto with tiles of 16 x 8 rows and columns, so that small shapes fit native.)
void expect_group_runs(const asynctp_test::RsShape& shape, Algorithm expected, int preferring) {
  asynctp_test::CleanPlannerEnv clean_env;
  Options options;
  options.algorithm = Algorithm::automatic;
  options.tile_m = 16;
  options.tile_n = 8;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  SCOPED_TRACE(shape.to_string());
  auto rng = seed.rng();
  asynctp_test::ReduceScatterProblem problem(shape, rng);
  cpu::Group group({shape.world, 2});
  const auto outcomes = asynctp_test::run_and_check(group, problem, options);
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].info.algorithm, expected)
        << "rank " << r << ": " << outcomes[r].info.reason;
  }
  const std::string& reason = outcomes[static_cast<std::size_t>(preferring)].info.reason;
  EXPECT_TRUE(contains(reason, std::string("the group runs ") + to_string(expected))) << reason;
  EXPECT_TRUE(contains(reason, "this rank's native")) << reason;
  // The rank whose k blocks native is named with its planner's reason.
  EXPECT_TRUE(contains(reason, "k (14) is not a multiple of 8")) << reason;
  // The same call again agrees the same way (fresh inputs, same plan).
  problem.refill(rng);
  const auto again = asynctp_test::run_and_check(group, problem, options);
  for (const auto& out : again) EXPECT_EQ(out.info.algorithm, expected) << out.info.reason;
}

TEST(ReduceScatterUnevenK, AutoRunsDecomposedWhenOneSliceBlocksNativeOnSmallChunks) {
  asynctp_test::RsShape shape = asynctp_test::rs_shape(2, 16, 40, 40);
  shape.k = {40, 14};  // native needs k a multiple of 8: rank 1's is not
  // Rank 1's chunks of 16 rows are too small for per-chunk GEMMs.
  expect_group_runs(shape, Algorithm::decomposed, 0);
}

TEST(ReduceScatterUnevenK, AutoRunsPipelinedWhereEveryRankCan) {
  asynctp_test::RsShape shape = asynctp_test::rs_shape(3, 128, 24, 32);
  shape.k = {32, 14, 48};  // ranks 0 and 2 could run native, rank 1 cannot
  expect_group_runs(shape, Algorithm::pipelined, 2);
}

// A rank that forced an algorithm runs only that one: the auto ranks follow
// it where they can.
TEST(ReduceScatterUnevenK, AutoRanksFollowARankThatForcedWhatTheyCanRun) {
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean_env;
  asynctp_test::ReduceScatterProblem problem(asynctp_test::rs_shape(2, 16, 16, 32), rng);
  cpu::Group group({2, 2});
  problem.poison_outputs();
  const auto outcomes = asynctp_test::run_collective(group, [&](Comm& comm) {
    Options options;
    options.tile_m = 16;
    options.tile_n = 8;
    options.algorithm = comm.rank() == 1 ? Algorithm::decomposed : Algorithm::automatic;
    return problem.call(comm, options);
  });
  asynctp_test::expect_all_ok(outcomes);
  problem.expect_all_correct();
  for (const auto& out : outcomes) EXPECT_EQ(out.info.algorithm, Algorithm::decomposed);
}

}  // namespace
}  // namespace asynctp
