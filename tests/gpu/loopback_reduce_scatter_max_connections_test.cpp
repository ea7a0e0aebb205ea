// fused_matmul_reduce_scatter with CUDA_DEVICE_MAX_CONNECTIONS=1 (every
// stream in one FIFO hardware queue): the pcie link's reductions wait on
// flags their peers' copies write, so they must be enqueued behind every
// rank's copies, or the queue stalls until the wait times out. Runs only in
// a process started with the variable set to 1 (as
// loopback_max_connections_test.cpp) and skips otherwise.
//
//   LoopbackReduceScatterMaxConnections.EveryAlgorithmCompletes
//       W = 4, both links: native, pipelined and decomposed forced, and auto
//       (which picks decomposed and names the variable): correct on every
//       rank, two rounds each. Native's chunk waits are enqueued after its
//       grid, so none sits ahead of the GEMM in the one queue.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::gpu::DeviceRsProblem;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

TEST(LoopbackReduceScatterMaxConnections, EveryAlgorithmCompletes) {
  ASYNCTP_REQUIRE_SM90();
  if (!lb::single_hardware_queue()) {
    GTEST_SKIP() << "runs only in a process started with CUDA_DEVICE_MAX_CONNECTIONS=1";
  }
  lb::CleanPlannerEnv env;
  constexpr int kWorld = 4;
  for (Link link : {Link::pcie, Link::arrival}) {
    for (Algorithm algorithm :
         {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed, Algorithm::automatic}) {
      const std::string what = std::string(cuda::to_string(link)) + " " + to_string(algorithm);
      const Seed seed(what);
      SCOPED_TRACE(seed.note() + " " + what);
      auto rng = seed.rng();
      LoopbackGroup group(lb::loopback_config(kWorld, link));
      RankStreams streams;
      CUDA_ASSERT(streams.create(kWorld));
      DeviceRsProblem problem(asynctp_test::rs_shape(kWorld, 256, 392, 256), rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const Options options = lb::options_for(algorithm);
      const Algorithm expected =
          algorithm == Algorithm::automatic ? Algorithm::decomposed : algorithm;
      for (int round = 0; round < 2; ++round) {
        if (round > 0) {
          ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
          ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
        }
        const auto results = lb::run_ranks(
            group, streams,
            [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); }, what);
        lb::expect_all_ok(results, expected);
        if (algorithm == Algorithm::automatic) {
          for (const auto& res : results) {
            EXPECT_TRUE(lb::contains(res.info.reason, "CUDA_DEVICE_MAX_CONNECTIONS"))
                << res.info.reason;
          }
        }
        ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
      }
    }
  }
}

}  // namespace
}  // namespace asynctp
