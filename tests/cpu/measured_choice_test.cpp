// The measured choice on the CPU backend (ASYNCTP_TUNE=on; core/tuning.hpp):
// under auto, a problem's first calls run every algorithm the group can run
// twice each, then the group keeps the one whose slowest rank was fastest.
// Every call, measuring or not, gives the right answer on every rank, and
// every rank runs the same algorithm in every call. Which algorithm wins is
// this machine's business: the tests check the sequence and the agreement,
// not the winner.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Small tiles, so that native runs these small shapes; 128 rows per chunk,
// so that pipelined does too.
Options small_tiles() {
  Options options;
  options.algorithm = Algorithm::automatic;
  options.tile_m = 16;
  options.tile_n = 8;
  return options;
}

// Calls `problem` under `options` `calls` times, each checked against the
// reference; returns each call's algorithm and reason, after checking that
// every rank ran the same algorithm.
template <typename Problem>
RunInfo call_once(cpu::Group& group, Problem& problem, const Options& options,
                  std::mt19937_64& rng) {
  problem.refill(rng);
  const auto outcomes = asynctp_test::run_and_check(group, problem, options);
  for (const auto& out : outcomes) {
    EXPECT_EQ(out.info.algorithm, outcomes.front().info.algorithm) << out.info.reason;
  }
  return outcomes.front().info;
}

template <typename Problem>
std::vector<RunInfo> call_repeatedly(Problem& problem, int world, const Options& options, int calls,
                                     std::mt19937_64& rng) {
  cpu::Group group({world, 2});
  std::vector<RunInfo> infos;
  for (int i = 0; i < calls; ++i) {
    SCOPED_TRACE("call " + std::to_string(i + 1));
    infos.push_back(call_once(group, problem, options, rng));
  }
  return infos;
}

// Calls 1-6 measure native, pipelined, decomposed (the planner's native
// first), twice each; call 7 chooses; call 8 runs the kept choice.
void expect_measured_then_kept(const std::vector<RunInfo>& infos) {
  ASSERT_EQ(infos.size(), 8u);
  const Algorithm measured[] = {Algorithm::native,    Algorithm::native,     Algorithm::pipelined,
                                Algorithm::pipelined, Algorithm::decomposed, Algorithm::decomposed};
  for (std::size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE("call " + std::to_string(i + 1));
    EXPECT_EQ(infos[i].algorithm, measured[i]) << infos[i].reason;
    EXPECT_TRUE(contains(infos[i].reason,
                         std::string("measured choice: measuring ") + to_string(measured[i])))
        << infos[i].reason;
  }
  EXPECT_TRUE(contains(infos[6].reason, "measured choice: native ")) << infos[6].reason;
  EXPECT_TRUE(contains(infos[6].reason, "pipelined ")) << infos[6].reason;
  EXPECT_TRUE(contains(infos[6].reason, "decomposed ")) << infos[6].reason;
  EXPECT_TRUE(contains(infos[6].reason, "kept for this problem")) << infos[6].reason;
  // Later calls keep the choice and say what it was made of.
  EXPECT_EQ(infos[7].algorithm, infos[6].algorithm);
  EXPECT_EQ(infos[7].reason, infos[6].reason);
}

TEST(MeasuredChoice, AllGatherMeasuresEachAlgorithmThenKeepsOne) {
  asynctp_test::CleanPlannerEnv clean_env;
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::FusedProblem problem(asynctp_test::make_shape(2, 128, 16, 32), rng);
  expect_measured_then_kept(call_repeatedly(problem, 2, small_tiles(), 8, rng));
}

TEST(MeasuredChoice, ReduceScatterMeasuresEachAlgorithmThenKeepsOne) {
  asynctp_test::CleanPlannerEnv clean_env;
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::ReduceScatterProblem problem(asynctp_test::rs_shape(3, 128, 16, 32), rng);
  expect_measured_then_kept(call_repeatedly(problem, 3, small_tiles(), 8, rng));
}

// A measuring call's time is read at the rank's next call, whatever its
// problem: two problems' calls interleaved on one group (the option, not the
// environment, asking for it) each measure and keep their own choice.
TEST(MeasuredChoice, InterleavedProblemsEachMeasureAndKeepTheirOwn) {
  asynctp_test::CleanPlannerEnv clean_env;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::FusedProblem gather(asynctp_test::make_shape(2, 128, 16, 32), rng);
  asynctp_test::ReduceScatterProblem scatter(asynctp_test::rs_shape(2, 128, 16, 32), rng);
  Options options = small_tiles();
  options.tune = true;
  cpu::Group group({2, 2});
  std::vector<RunInfo> gather_infos;
  std::vector<RunInfo> scatter_infos;
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE("round " + std::to_string(i + 1));
    gather_infos.push_back(call_once(group, gather, options, rng));
    scatter_infos.push_back(call_once(group, scatter, options, rng));
  }
  {
    SCOPED_TRACE("all-gather + matmul");
    expect_measured_then_kept(gather_infos);
  }
  {
    SCOPED_TRACE("matmul + reduce-scatter");
    expect_measured_then_kept(scatter_infos);
  }
}

TEST(MeasuredChoice, OffByDefaultAndNeverOverAForcedAlgorithm) {
  asynctp_test::CleanPlannerEnv clean_env;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::FusedProblem problem(asynctp_test::make_shape(2, 128, 16, 32), rng);
  for (const RunInfo& info : call_repeatedly(problem, 2, small_tiles(), 3, rng)) {
    EXPECT_EQ(info.algorithm, Algorithm::native) << info.reason;
    EXPECT_FALSE(contains(info.reason, "measured choice")) << info.reason;
  }
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  Options forced = small_tiles();
  forced.algorithm = Algorithm::pipelined;
  for (const RunInfo& info : call_repeatedly(problem, 2, forced, 3, rng)) {
    EXPECT_EQ(info.algorithm, Algorithm::pipelined) << info.reason;
    EXPECT_FALSE(contains(info.reason, "measured choice")) << info.reason;
  }
}

}  // namespace
}  // namespace asynctp
