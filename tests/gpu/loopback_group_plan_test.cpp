// Ranks whose planners choose differently agree on one algorithm on the
// loopback group too (core::agreed_plan; the call flow re-checks each rank's
// half for the group's choice: on the GPU that drops the native kernel and
// its signal pieces). Each rank on its own non-blocking stream, outputs
// poisoned, checked against float64:
//
//   LoopbackGroupPlan.AutoRanksFollowARankThatForcedDecomposed
//       all-gather + matmul, W = 4, a shape auto runs natively (hundreds of
//       tiles, bf16): rank 2 forces decomposed, the others ask for auto;
//       every rank runs decomposed, and the auto ranks' reasons say the
//       group's choice differed from their planner's.
//   LoopbackGroupPlan.UnevenKSlicesUnderAuto
//       matmul + reduce-scatter, W = 4, uneven K-slices (one not a multiple
//       of 8), auto on every rank but rank 1, which forces decomposed: every
//       rank runs decomposed and is correct; then all auto: every rank runs
//       the same algorithm.
//   LoopbackGroupPlan.ForcedAlgorithmsThatDifferStayAMismatch
//       rank 0 forces pipelined, the others decomposed: Error(mismatch) on
//       every rank, outputs untouched.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::gpu::DeviceRsProblem;
namespace lb = asynctp_test::loopback;

constexpr int kWorld = 4;

// A pcie loopback group of kWorld ranks, a stream each, a printed seed, and
// no ASYNCTP_* variable steering the planner.
class LoopbackGroupPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    ASYNCTP_REQUIRE_SM90();
    group_.emplace(lb::loopback_config(kWorld, cuda::Link::pcie));
    CUDA_ASSERT(streams_.create(kWorld));
  }

  // Every rank calls `problem`, then synchronize: rank `one` asking for
  // `its`, the others for `theirs`.
  template <class Problem>
  std::vector<lb::RankResult> run(const Problem& problem, int one, Algorithm its, Algorithm theirs,
                                  const std::string& what) {
    SCOPED_TRACE(seed_.note());
    return lb::run_ranks(
        *group_, streams_,
        [&](Comm& comm, cudaStream_t s) {
          return problem.call(comm, lb::options_for(comm.rank() == one ? its : theirs), s);
        },
        what);
  }

  lb::CleanPlannerEnv env_;
  const asynctp_test::Seed seed_;
  std::mt19937_64 rng_ = seed_.rng();
  std::optional<cuda::LoopbackGroup> group_;
  lb::RankStreams streams_;
};

// Every rank ran `algorithm`; rank `forcing` says it was forced, the others
// either chose it themselves or say that the group's choice differed.
void expect_everyone_ran(const std::vector<lb::RankResult>& results, Algorithm algorithm,
                         int forcing) {
  lb::expect_all_ok(results, algorithm);
  for (int r = 0; r < kWorld; ++r) {
    const std::string& reason = results[static_cast<std::size_t>(r)].info.reason;
    if (r == forcing) {
      EXPECT_TRUE(lb::contains(reason, "forced")) << reason;
    }
  }
}

TEST_F(LoopbackGroupPlan, AutoRanksFollowARankThatForcedDecomposed) {
  const auto shape = lb::loopback_shape(kWorld, 4096, 2048, 256, DType::bf16);
  lb::print_case(seed_, shape.to_string());
  lb::LoopbackProblem problem(shape, rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const auto results =
      run(problem, 2, Algorithm::decomposed, Algorithm::automatic, "rank 2 forces decomposed");
  expect_everyone_ran(results, Algorithm::decomposed, 2);
  if (!lb::single_hardware_queue()) {
    // Their planners chose native here (loopback_planner_test): they say so.
    const std::string& reason = results[0].info.reason;
    EXPECT_TRUE(lb::contains(reason, "the group runs decomposed")) << reason;
    EXPECT_TRUE(lb::contains(reason, "this rank's native")) << reason;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

TEST_F(LoopbackGroupPlan, UnevenKSlicesUnderAuto) {
  // Chunks large enough for overlap to pay on rank 0's own plan.
  asynctp_test::RsShape shape = asynctp_test::rs_shape(kWorld, 2048, 4096, 0);
  shape.k = {128, 12, 72, 200};  // rank 1's slice is not a multiple of 8
  lb::print_case(seed_, shape.to_string());
  DeviceRsProblem problem(shape, rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const RunInfo own =
      problem.plan(group_->comm(0), lb::options_for(Algorithm::automatic));
  const auto results = run(problem, 1, Algorithm::decomposed, Algorithm::automatic,
                           "uneven K, rank 1 forces decomposed");
  expect_everyone_ran(results, Algorithm::decomposed, 1);
  // Where rank 0's own planner chose otherwise, its reason says so.
  if (own.algorithm != Algorithm::decomposed) {
    EXPECT_TRUE(lb::contains(results[0].info.reason, "the group runs decomposed"))
        << "rank 0 planned " << to_string(own.algorithm) << ": " << results[0].info.reason;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

  // Every rank auto: one algorithm on every rank, correct.
  ASSERT_NO_FATAL_FAILURE(problem.refill(rng_));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const auto all_auto =
      run(problem, 0, Algorithm::automatic, Algorithm::automatic, "uneven K, all auto");
  lb::expect_all_ok(all_auto, all_auto[0].info.algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

TEST_F(LoopbackGroupPlan, ForcedAlgorithmsThatDifferStayAMismatch) {
  DeviceRsProblem problem(asynctp_test::rs_shape(kWorld, 256, 64, 64), rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const auto results =
      run(problem, 0, Algorithm::pipelined, Algorithm::decomposed, "forced algorithms that differ");
  for (const lb::RankResult& res : results) {
    EXPECT_EQ(ErrorCode::mismatch, res.code.value_or(ErrorCode::backend)) << res.message;
    EXPECT_TRUE(lb::contains(res.message, "ranks disagree on the algorithm")) << res.message;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("forced algorithms differ"));
}

}  // namespace
}  // namespace asynctp
