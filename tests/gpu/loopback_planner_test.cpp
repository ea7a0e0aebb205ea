// The planner of the CUDA loopback backend through the public API
// (plan_fused_all_gather_matmul: local, writes nothing), and what auto then
// runs. The ASYNCTP_* planner variables are cleared for every test.
//
//   LoopbackPlanner.AutoPicksNativeForFittingBf16
//       bf16, m per rank a multiple of 128 (and of 256), n and k multiples
//       of 8, both B layouts, enough output tiles for every SM: the plan is
//       native with a tile M dividing m; the plan writes nothing; the auto
//       call runs what was planned (same algorithm, tile, reason) and is
//       correct.
//   LoopbackPlanner.AutoDoesNotOverlapWhereTheKernelWouldLeaveSmsIdle
//       a fitting shape of at most 16 output tiles: the plan is decomposed and says
//       how many SMs native would keep busy; the auto call runs it
//       correctly, and forced native still runs and is correct.
//   LoopbackPlanner.UnmeasuredSmallTilesRunOnlyWhenForced
//       m per rank 64 and 192 (multiples of the 64-row configs only, which
//       are built but not measured): auto's plan is not native and says the
//       config was never measured; forced native plans tile M 64 and runs
//       correctly.
//   LoopbackPlanner.AutoFallsBackAndSaysWhy
//       m per rank not a multiple of the tile M (96, 160, 200), fp16, fp32,
//       n or k not a multiple of 8: the plan is not native and its reason
//       names the broken rule's value; the auto call runs the fallback
//       (same plan) correctly. Both skipped in a process with
//       CUDA_DEVICE_MAX_CONNECTIONS=1, where auto has another reason.
//   LoopbackPlanner.ForcedNativeThatCannotRunIsUnsupported
//       the same non-fitting shapes forced to native: plan and call throw
//       Error(unsupported) naming the rule on every rank, outputs untouched;
//       the group still works afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::Shape;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

constexpr int kWorld = 2;

// Plans on rank 0, checks the plan wrote nothing, then runs the call with the
// same options on every rank and checks that it ran what was planned and is
// correct. *plan_out gets the plan.
void plan_then_run(LoopbackGroup& group, const RankStreams& streams, LoopbackProblem& problem,
                   const Options& options, RunInfo* plan_out) {
  RunInfo plan;
  ASSERT_NO_THROW(plan = problem.plan(group.comm(0), options));
  *plan_out = plan;
  std::printf("  %-50s -> %s (tile %lldx%lld): %s\n", problem.shape().to_string().c_str(),
              to_string(plan.algorithm), static_cast<long long>(plan.tile_m),
              static_cast<long long>(plan.tile_n), plan.reason.c_str());
  EXPECT_FALSE(plan.reason.empty());
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("after plan"));
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "auto " + problem.shape().to_string());
  lb::expect_all_ok(results, plan.algorithm);
  for (const auto& res : results) {
    if (!res.ok()) continue;
    EXPECT_EQ(plan.tile_m, res.info.tile_m);
    EXPECT_EQ(plan.tile_n, res.info.tile_n);
    EXPECT_EQ(plan.reason, res.info.reason);
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

// Every test: sm_90 or skipped, the ASYNCTP_* planner variables cleared, a
// seed, and a pcie loopback group of kWorld ranks with a stream each.
class LoopbackPlanner : public ::testing::Test {
 protected:
  void SetUp() override {
    ASYNCTP_REQUIRE_SM90();
    group_.emplace(lb::loopback_config(kWorld, Link::pcie));
    CUDA_ASSERT(streams_.create(kWorld));
  }

  lb::CleanPlannerEnv env_;
  // Forced native on every rank of the group: it runs, and every rank's
  // output (poisoned first) is right.
  void expect_forced_native_correct(LoopbackProblem& problem, const std::string& label) {
    const Options native = lb::options_for(Algorithm::native);
    ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    const auto results = lb::run_ranks(
        *group_, streams_,
        [&](Comm& comm, cudaStream_t s) { return problem.call(comm, native, s); }, label);
    lb::expect_all_ok(results, Algorithm::native);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }

  const Seed seed_;
  std::mt19937_64 rng_ = seed_.rng();
  std::optional<LoopbackGroup> group_;
  RankStreams streams_;
};

TEST_F(LoopbackPlanner, AutoPicksNativeForFittingBf16) {
  if (lb::single_hardware_queue()) {
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS=1: auto does not pick native in this process";
  }
  SCOPED_TRACE(seed_.note());
  lb::print_case(seed_, "fitting bf16 shapes");
  // Hundreds of output tiles with any config (auto does not overlap a
  // problem that leaves SMs idle: the next test), K small to stay quick.
  const Shape shapes[] = {
      lb::loopback_shape(kWorld, 4096, 2048, 256, DType::bf16, false),
      lb::loopback_shape(kWorld, 4096, 2056, 264, DType::bf16, true),
      // A multiple of 128 that is not one of 256: a 128-row config must fit.
      lb::loopback_shape(kWorld, 4224, 1544, 136, DType::bf16, false, /*gathered=*/false),
  };
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.to_string());
    LoopbackProblem problem(shape, rng_);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    RunInfo plan;
    ASSERT_NO_FATAL_FAILURE(plan_then_run(*group_, streams_, problem, Options{}, &plan));
    EXPECT_EQ(Algorithm::native, plan.algorithm) << plan.reason;
    ASSERT_GT(plan.tile_m, 0);
    EXPECT_GT(plan.tile_n, 0);
    EXPECT_EQ(0, shape.m % plan.tile_m) << "tile M " << plan.tile_m << " does not divide m";
  }
}

TEST_F(LoopbackPlanner, AutoDoesNotOverlapWhereTheKernelWouldLeaveSmsIdle) {
  if (lb::single_hardware_queue()) {
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS=1: auto's reason is about the variable here";
  }
  SCOPED_TRACE(seed_.note());
  lb::print_case(seed_, "a fitting shape too small to fill the GPU");
  // 512 gathered rows x 512 columns: 8 output tiles of 128x256, 16 of
  // 128x128, against 132 SMs on an H100 or H200.
  LoopbackProblem problem(lb::loopback_shape(kWorld, 256, 512, 256), rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  RunInfo plan;
  ASSERT_NO_FATAL_FAILURE(plan_then_run(*group_, streams_, problem, Options{}, &plan));
  EXPECT_EQ(Algorithm::decomposed, plan.algorithm) << plan.reason;
  EXPECT_TRUE(lb::contains(plan.reason, "overlap does not pay")) << plan.reason;
  EXPECT_TRUE(lb::contains(plan.reason, "SMs busy")) << plan.reason;

  ASSERT_NO_FATAL_FAILURE(expect_forced_native_correct(problem, "forced native on a small shape"));
}

TEST_F(LoopbackPlanner, UnmeasuredSmallTilesRunOnlyWhenForced) {
  SCOPED_TRACE(seed_.note());
  lb::print_case(seed_, "m per rank 64 and 192: the 64-row configs");
  // Wide enough that either 64-row config fills the SMs (64 x 128: 256 and
  // 264 tiles; 64 x 256: 128 and 132), so no rule before the measurement
  // rule turns native down.
  for (const Shape& shape : {lb::loopback_shape(kWorld, 64, 16384, 256, DType::bf16, false),
                             lb::loopback_shape(kWorld, 192, 5632, 136, DType::bf16, true)}) {
    SCOPED_TRACE(shape.to_string());
    LoopbackProblem problem(shape, rng_);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    RunInfo plan;
    ASSERT_NO_FATAL_FAILURE(plan_then_run(*group_, streams_, problem, Options{}, &plan));
    EXPECT_NE(Algorithm::native, plan.algorithm) << plan.reason;
    if (!lb::single_hardware_queue()) {  // else the reason is about that variable
      EXPECT_TRUE(lb::contains(plan.reason, "never measured")) << plan.reason;
    }
    const RunInfo forced = problem.plan(group_->comm(0), lb::options_for(Algorithm::native));
    EXPECT_EQ(Algorithm::native, forced.algorithm) << forced.reason;
    EXPECT_EQ(64, forced.tile_m) << forced.reason;
    ASSERT_NO_FATAL_FAILURE(
        expect_forced_native_correct(problem, "forced native with 64-row tiles"));
  }
}

struct Unfit {
  Shape shape;
  std::vector<std::string> reason_parts;  // each must appear in the reason
};

std::vector<Unfit> unfit_shapes() {
  return {
      // m per rank not a multiple of any native tile M (64, 128 or 256).
      {lb::loopback_shape(kWorld, 96, 256, 128), {"96", "multiple"}},
      {lb::loopback_shape(kWorld, 160, 256, 128, DType::bf16, true), {"160", "multiple"}},
      {lb::loopback_shape(kWorld, 200, 256, 128), {"200", "multiple"}},
      // Not bf16.
      {lb::loopback_shape(kWorld, 256, 256, 128, DType::fp16), {"fp16"}},
      {lb::loopback_shape(kWorld, 256, 256, 128, DType::fp32, true), {"fp32"}},
      // n or k not a multiple of 8.
      {lb::loopback_shape(kWorld, 256, 500, 128), {"500", "multiple"}},
      {lb::loopback_shape(kWorld, 256, 256, 260, DType::bf16, true), {"260", "multiple"}},
  };
}

TEST_F(LoopbackPlanner, AutoFallsBackAndSaysWhy) {
  if (lb::single_hardware_queue()) {
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS=1: auto's reason is about the variable here";
  }
  SCOPED_TRACE(seed_.note());
  lb::print_case(seed_, "non-fitting shapes");
  for (const Unfit& u : unfit_shapes()) {
    SCOPED_TRACE(u.shape.to_string());
    LoopbackProblem problem(u.shape, rng_);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    RunInfo plan;
    ASSERT_NO_FATAL_FAILURE(plan_then_run(*group_, streams_, problem, Options{}, &plan));
    EXPECT_NE(Algorithm::native, plan.algorithm) << plan.reason;
    for (const std::string& part : u.reason_parts) {
      EXPECT_TRUE(lb::contains(plan.reason, part))
          << "the reason does not mention '" << part << "': " << plan.reason;
    }
  }
}

TEST_F(LoopbackPlanner, ForcedNativeThatCannotRunIsUnsupported) {
  SCOPED_TRACE(seed_.note());
  lb::print_case(seed_, "forced native on non-fitting shapes");
  const Options native = lb::options_for(Algorithm::native);
  for (const Unfit& u : unfit_shapes()) {
    SCOPED_TRACE(u.shape.to_string());
    LoopbackProblem problem(u.shape, rng_);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    try {
      const RunInfo info = problem.plan(group_->comm(1), native);
      ADD_FAILURE() << "planned forced native where it cannot run: " << info.reason;
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::unsupported, e.code()) << e.what();
      EXPECT_TRUE(lb::contains(e.what(), "native")) << e.what();
      for (const std::string& part : u.reason_parts) {
        EXPECT_TRUE(lb::contains(e.what(), part)) << "missing '" << part << "': " << e.what();
      }
    }
    const auto results = lb::run_ranks(
        *group_, streams_,
        [&](Comm& comm, cudaStream_t s) { return problem.call(comm, native, s); },
        "forced native " + u.shape.to_string());
    for (std::size_t r = 0; r < results.size(); ++r) {
      const auto& res = results[r];
      EXPECT_FALSE(res.call_ok) << "rank " << r << " ran forced native: " << res.info.reason;
      EXPECT_EQ("call", res.stage) << "rank " << r;
      EXPECT_EQ(ErrorCode::unsupported, res.code) << "rank " << r << ": " << res.message;
      for (const std::string& part : u.reason_parts) {
        EXPECT_TRUE(lb::contains(res.message, part))
            << "rank " << r << ": missing '" << part << "': " << res.message;
      }
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("forced native refused"));
  }
  // The group still runs a good call.
  LoopbackProblem good(lb::loopback_shape(kWorld, 256, 264, 128), rng_);
  ASSERT_NO_FATAL_FAILURE(good.prepare());
  const auto results = lb::run_ranks(
      *group_, streams_, [&](Comm& comm, cudaStream_t s) { return good.call(comm, native, s); },
      "good call after refusals");
  lb::expect_all_ok(results, Algorithm::native);
  ASSERT_NO_FATAL_FAILURE(good.expect_all_correct());
}

}  // namespace
}  // namespace asynctp
