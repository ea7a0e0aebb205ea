// The measured choice on the CPU backend (ASYNCTP_TUNE=on; core/tuning.hpp):
// under auto, a problem's first calls run every algorithm the group can run
// in turn (six rounds: these calls are short), then the group keeps the one
// whose slowest rank was fastest.
// Every call, measuring or not, gives the right answer on every rank, and
// every rank runs the same algorithm in every call. Which algorithm wins is
// this machine's business: the tests check the sequence and the agreement,
// not the winner.
#include <gtest/gtest.h>

#include <random>
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

// Every call of these tests: the measuring calls, the one that chooses, and
// one that runs the kept choice.
constexpr int kCalls = kMaxTuningCalls + 2;

// Calls 1-18 measure native, pipelined, decomposed (the planner's native
// first) in turn, six rounds (these calls are short), every other round in
// reverse; call 19 chooses; call 20 runs the kept choice.
void expect_measured_then_kept(const std::vector<RunInfo>& infos) {
  ASSERT_EQ(infos.size(), static_cast<std::size_t>(kCalls));
  const Algorithm round[] = {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed};
  const std::size_t measuring = kMaxTuningCalls;
  for (std::size_t i = 0; i < measuring; ++i) {
    SCOPED_TRACE("call " + std::to_string(i + 1));
    const std::size_t turn = i % 3;
    const Algorithm expected = round[(i / 3) % 2 == 0 ? turn : 2 - turn];
    EXPECT_EQ(infos[i].algorithm, expected) << infos[i].reason;
    EXPECT_TRUE(
        contains(infos[i].reason, std::string("measured choice: measuring ") + to_string(expected)))
        << infos[i].reason;
    EXPECT_TRUE(contains(infos[i].reason, "gets 6 calls")) << infos[i].reason;
  }
  const RunInfo& chose = infos[measuring];
  EXPECT_TRUE(contains(chose.reason, "measured choice: native ")) << chose.reason;
  EXPECT_TRUE(contains(chose.reason, "pipelined ")) << chose.reason;
  EXPECT_TRUE(contains(chose.reason, "decomposed ")) << chose.reason;
  EXPECT_TRUE(contains(chose.reason, "lower median of 6 calls")) << chose.reason;
  EXPECT_TRUE(contains(chose.reason, "kept for this problem")) << chose.reason;
  // Later calls keep the choice and say what it was made of.
  EXPECT_EQ(infos[measuring + 1].algorithm, chose.algorithm);
  EXPECT_EQ(infos[measuring + 1].reason, chose.reason);
}

// Every case: the planner's environment cleared, a seed it reports.
class MeasuredChoice : public ::testing::Test {
 protected:
  asynctp_test::CleanPlannerEnv clean_env_;
  const asynctp_test::Seed seed_;
  std::mt19937_64 rng_ = seed_.rng();
};

// The public query (the CLI sizes an auto row's warm-up by it): the option
// where set, else the environment, by the rule the calls resolve it with.
TEST_F(MeasuredChoice, MeasuredChoiceOnAnswersAsTheCallsResolveIt) {
  Options off;
  off.tune = false;
  {
    asynctp_test::ScopedEnv env("ASYNCTP_TUNE", "on");
    EXPECT_TRUE(measured_choice_on({}));
    EXPECT_FALSE(measured_choice_on(off));
  }
  {
    asynctp_test::ScopedEnv env("ASYNCTP_TUNE", "maybe");
    EXPECT_THROW(measured_choice_on({}), Error);
    EXPECT_FALSE(measured_choice_on(off));
  }
  asynctp_test::ScopedEnv env("ASYNCTP_TUNE", std::nullopt);
  EXPECT_FALSE(measured_choice_on({}));
  Options on;
  on.tune = true;
  EXPECT_TRUE(measured_choice_on(on));
}

TEST_F(MeasuredChoice, AllGatherMeasuresEachAlgorithmThenKeepsOne) {
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  SCOPED_TRACE(seed_.note());
  asynctp_test::FusedProblem problem(asynctp_test::make_shape(2, 128, 16, 32), rng_);
  expect_measured_then_kept(call_repeatedly(problem, 2, small_tiles(), kCalls, rng_));
}

TEST_F(MeasuredChoice, ReduceScatterMeasuresEachAlgorithmThenKeepsOne) {
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  SCOPED_TRACE(seed_.note());
  asynctp_test::ReduceScatterProblem problem(asynctp_test::rs_shape(3, 128, 16, 32), rng_);
  expect_measured_then_kept(call_repeatedly(problem, 3, small_tiles(), kCalls, rng_));
}

// A measuring call's time is read at the rank's next call, whatever its
// problem: two problems' calls interleaved on one group (the option, not the
// environment, asking for it) each measure and keep their own choice.
TEST_F(MeasuredChoice, InterleavedProblemsEachMeasureAndKeepTheirOwn) {
  SCOPED_TRACE(seed_.note());
  asynctp_test::FusedProblem gather(asynctp_test::make_shape(2, 128, 16, 32), rng_);
  asynctp_test::ReduceScatterProblem scatter(asynctp_test::rs_shape(2, 128, 16, 32), rng_);
  Options options = small_tiles();
  options.tune = true;
  cpu::Group group({2, 2});
  std::vector<RunInfo> gather_infos;
  std::vector<RunInfo> scatter_infos;
  for (int i = 0; i < kCalls; ++i) {
    SCOPED_TRACE("round " + std::to_string(i + 1));
    gather_infos.push_back(call_once(group, gather, options, rng_));
    scatter_infos.push_back(call_once(group, scatter, options, rng_));
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

TEST_F(MeasuredChoice, OffByDefaultAndNeverOverAForcedAlgorithm) {
  SCOPED_TRACE(seed_.note());
  asynctp_test::FusedProblem problem(asynctp_test::make_shape(2, 128, 16, 32), rng_);
  for (const RunInfo& info : call_repeatedly(problem, 2, small_tiles(), 3, rng_)) {
    EXPECT_EQ(info.algorithm, Algorithm::native) << info.reason;
    EXPECT_FALSE(contains(info.reason, "measured choice")) << info.reason;
  }
  asynctp_test::ScopedEnv tune("ASYNCTP_TUNE", "on");
  Options forced = small_tiles();
  forced.algorithm = Algorithm::pipelined;
  for (const RunInfo& info : call_repeatedly(problem, 2, forced, 3, rng_)) {
    EXPECT_EQ(info.algorithm, Algorithm::pipelined) << info.reason;
    EXPECT_FALSE(contains(info.reason, "measured choice")) << info.reason;
  }
}

}  // namespace
}  // namespace asynctp
