// CUDA graph capture of loopback calls (Link::pcie, W = 4): each rank
// captures its whole call (copies, signal writes, GEMM) on its own stream,
// then the graphs are replayed 100 times with no host-side reset in between.
//
//   LoopbackGraph/Modes.ReplaysWithFreshInputs
//       native and pipelined x capture mode thread-local and relaxed.
//       A direct call first (checked; warms one-time host work outside the
//       capture). The capture: every rank's capture ends with a graph that
//       holds at least one kernel and at least W - 1 memcpy nodes (the peer
//       chunks), and capturing ran nothing (outputs still poisoned). Each
//       replay: fresh random A and B written to every rank and the device
//       synchronized (loopback ranks cannot join each other's streams inside
//       a capture), outputs re-poisoned, the four graphs launched on the four
//       streams, synchronize on every rank reports nothing (the native
//       kernel's error words survive replays), then every rank's C and
//       gathered A checked against float64. A direct call after the replays
//       is correct too.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/graph_capture.hpp"
#include "gpu/graph_nodes.hpp"
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
constexpr int kReplays = 100;

struct Case {
  Algorithm algorithm;
  cudaStreamCaptureMode mode;
};

const char* mode_name(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeGlobal:
      return "global";
    case cudaStreamCaptureModeThreadLocal:
      return "thread_local";
    case cudaStreamCaptureModeRelaxed:
      return "relaxed";
  }
  return "?";
}

std::string describe(const Case& c) {
  return std::string(to_string(c.algorithm)) + "_" + mode_name(c.mode);
}
void PrintTo(const Case& c, std::ostream* out) { *out << describe(c); }

class LoopbackGraph : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackGraph, ReplaysWithFreshInputs) {
  ASYNCTP_REQUIRE_SM90();
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::int64_t m = c.mode == cudaStreamCaptureModeRelaxed ? 256 : 128;
  const Shape shape =
      lb::loopback_shape(kWorld, m, 8 * std::uniform_int_distribution<std::int64_t>(16, 32)(rng),
                         8 * std::uniform_int_distribution<std::int64_t>(16, 32)(rng), DType::bf16,
                         c.algorithm == Algorithm::pipelined);
  SCOPED_TRACE(describe(c) + " " + shape.to_string());
  lb::print_case(seed, describe(c) + " " + shape.to_string());

  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const Options options = lb::options_for(c.algorithm);

  // 1. A direct call.
  {
    const auto results = lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "direct call before capture");
    lb::expect_all_ok(results, c.algorithm);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }

  // 2. Capture every rank's call on its own stream.
  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const lb::RankCaptures caps = lb::capture_every_rank(
      group, streams, c.mode,
      [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); });
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    lb::RankCapture& cap = *caps[static_cast<std::size_t>(r)];
    ASSERT_EQ(cudaSuccess, cap.begin) << cudaGetErrorName(cap.begin);
    ASSERT_TRUE(cap.call_ok) << "the call threw under capture: " << cap.message;
    EXPECT_EQ(c.algorithm, cap.info.algorithm) << cap.info.reason;
    ASSERT_EQ(cudaSuccess, cap.end) << "cudaStreamEndCapture: " << cudaGetErrorName(cap.end);
    ASSERT_NE(nullptr, cap.graph);
    const asynctp_test::gpu::GraphNodeCounts nodes =
        asynctp_test::gpu::count_graph_nodes(cap.graph);
    ASSERT_TRUE(nodes.ok) << "the driver did not give every node's type";
    std::printf("  rank %d graph: %d nodes, %d kernel, %d memcpy, %d mem-op\n", r, nodes.total,
                nodes.kernels, nodes.memcpys, nodes.mem_ops);
    EXPECT_GE(nodes.kernels, 1) << "the GEMM was not captured";
    EXPECT_GE(nodes.memcpys, kWorld - 1) << "the peer chunk copies were not captured";
    CUDA_ASSERT(cudaGraphInstantiate(&cap.exec, cap.graph, 0));
  }
  // Capturing records work; it must not have run any.
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("after capture"));

  // 3. Replays, each with fresh inputs.
  for (int i = 0; i < kReplays; ++i) {
    const std::string what = describe(c) + " replay " + std::to_string(i);
    SCOPED_TRACE(what);
    ASSERT_NO_FATAL_FAILURE(problem.refill(rng));  // uploads, then cudaDeviceSynchronize
    ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    CUDA_ASSERT(lb::launch_every_rank(caps, streams));
    streams.drain(what);
    // synchronize reports what only the device saw (a native wait that
    // timed out inside a replay): nothing here.
    ASSERT_NO_FATAL_FAILURE(lb::expect_synchronize_clean(group, what));
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
    if (HasFailure()) break;  // one failing replay says enough
  }

  // 4. The group still runs direct calls after the replays.
  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "direct call after replays");
  lb::expect_all_ok(results, c.algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, LoopbackGraph,
    ::testing::Values(Case{Algorithm::native, cudaStreamCaptureModeThreadLocal},
                      Case{Algorithm::native, cudaStreamCaptureModeRelaxed},
                      Case{Algorithm::pipelined, cudaStreamCaptureModeThreadLocal},
                      Case{Algorithm::pipelined, cudaStreamCaptureModeRelaxed}),
    [](const ::testing::TestParamInfo<Case>& info) { return describe(info.param); });

}  // namespace
}  // namespace asynctp
