// CUDA_DEVICE_MAX_CONNECTIONS=1 (every stream in one hardware queue, so
// copies and signal writes enqueued after the persistent GEMM may sit behind
// it): auto must not choose native and must say why; forced native must
// still be correct (without overlap). The variable is read when CUDA
// initializes, so these tests run only in a process started with it set to 1
// (the device script runs the GPU test binary a second time so) and skip
// otherwise.
//
//   LoopbackMaxConnections.AutoPicksDecomposedAndSaysWhy
//       W = 4, a bf16 shape native would otherwise run, both links: the plan
//       is decomposed with a reason naming CUDA_DEVICE_MAX_CONNECTIONS; the
//       auto call runs that plan and is correct.
//   LoopbackMaxConnections.ForcedNativeIsCorrect
//       W = 4, native forced, both links and B layouts, two rounds each:
//       correct on every rank.
#include <gtest/gtest.h>

#include <string>

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

constexpr int kWorld = 4;

#define ASYNCTP_REQUIRE_SINGLE_HARDWARE_QUEUE()                                            \
  do {                                                                                     \
    if (!::asynctp_test::loopback::single_hardware_queue())                                \
      GTEST_SKIP() << "runs only in a process started with CUDA_DEVICE_MAX_CONNECTIONS=1"; \
  } while (0)

TEST(LoopbackMaxConnections, AutoPicksDecomposedAndSaysWhy) {
  ASYNCTP_REQUIRE_SM90();
  ASYNCTP_REQUIRE_SINGLE_HARDWARE_QUEUE();
  lb::CleanPlannerEnv env;
  for (Link link : {Link::pcie, Link::arrival}) {
    const Seed seed(cuda::to_string(link));
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    // Fits native: bf16, m a multiple of 256, n and k multiples of 8.
    const Shape shape = lb::loopback_shape(kWorld, 256, 392, 256);
    SCOPED_TRACE(shape.to_string() + " link " + cuda::to_string(link));
    lb::print_case(seed, shape.to_string() + " link " + cuda::to_string(link));
    LoopbackGroup group(lb::loopback_config(kWorld, link));
    RankStreams streams;
    CUDA_ASSERT(streams.create(kWorld));
    LoopbackProblem problem(shape, rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    Options options;  // auto
    options.wait_timeout_ms = lb::kSafeWaitTimeoutMs;
    for (int r = 0; r < kWorld; ++r) {
      RunInfo plan;
      ASSERT_NO_THROW(plan = problem.plan(group.comm(r), options));
      EXPECT_EQ(Algorithm::decomposed, plan.algorithm) << "rank " << r << ": " << plan.reason;
      EXPECT_TRUE(lb::contains(plan.reason, "CUDA_DEVICE_MAX_CONNECTIONS"))
          << "rank " << r << ": " << plan.reason;
      if (r == 0) std::printf("  plan: %s: %s\n", to_string(plan.algorithm), plan.reason.c_str());
    }
    const auto results = lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "auto with one hardware queue");
    lb::expect_all_ok(results, Algorithm::decomposed);
    for (const auto& res : results) {
      EXPECT_TRUE(lb::contains(res.info.reason, "CUDA_DEVICE_MAX_CONNECTIONS")) << res.info.reason;
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

TEST(LoopbackMaxConnections, ForcedNativeIsCorrect) {
  ASYNCTP_REQUIRE_SM90();
  ASYNCTP_REQUIRE_SINGLE_HARDWARE_QUEUE();
  for (Link link : {Link::pcie, Link::arrival}) {
    for (bool bcol : {false, true}) {
      const std::string what =
          std::string(cuda::to_string(link)) + (bcol ? " B col-major" : " B row-major");
      const Seed seed(what);
      SCOPED_TRACE(seed.note());
      auto rng = seed.rng();
      const Shape shape = lb::loopback_shape(
          kWorld, bcol ? 384 : 256, 8 * std::uniform_int_distribution<std::int64_t>(17, 80)(rng),
          8 * std::uniform_int_distribution<std::int64_t>(8, 64)(rng), DType::bf16, bcol);
      SCOPED_TRACE(shape.to_string() + " " + what);
      lb::print_case(seed, shape.to_string() + " " + what);
      LoopbackGroup group(lb::loopback_config(kWorld, link));
      RankStreams streams;
      CUDA_ASSERT(streams.create(kWorld));
      LoopbackProblem problem(shape, rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const Options options = lb::options_for(Algorithm::native);
      for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        if (round > 0) {
          ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
          ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
        }
        const auto results = lb::run_ranks(
            group, streams,
            [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
            "forced native with one hardware queue");
        lb::expect_all_ok(results, Algorithm::native);
        ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
      }
    }
  }
}

}  // namespace
}  // namespace asynctp
