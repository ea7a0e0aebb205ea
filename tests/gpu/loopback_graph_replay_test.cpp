// A thousand replays of one captured call, for each op and algorithm the
// loopback group captures: graph replays must neither drift nor decay (a
// flag, an epoch or a workspace that a replay leaves behind would show as a
// wrong or unwritten element, or as a wait that times out). W = 4, one
// non-blocking stream per rank.
//
//   LoopbackGraphReplay/Cases.ThousandReplaysMatchTheFirst
//       all-gather + matmul on Link::pcie: native (its last chunk in the
//       kernel, and as a library GEMM), pipelined, decomposed;
//       matmul + reduce-scatter on Link::arrival (Link::pcie refuses the
//       capture): native, pipelined, decomposed (uneven K-slices).
//       A direct call first (checked against float64; it sets up what a
//       capture cannot allocate). Every rank captures the same call on its
//       stream (outputs poisoned: capturing runs nothing). Replay 1: every
//       rank's output checked against float64 (every element written) and
//       kept. Replays 2 .. 999 back to back on each rank's stream, the
//       inputs unchanged; synchronize reports nothing. Outputs poisoned,
//       replay 1000: every output bitwise equal to replay 1's.
//       ASYNCTP_TEST_GRAPH_REPLAYS=N replays N times instead (at least 2):
//       scripts/device/sanitize.sh cuts them, as its tools slow every kernel.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpu/graph_capture.hpp"
#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

namespace lb = asynctp_test::loopback;
using cuda::Link;

constexpr int kWorld = 4;

// 1000, or ASYNCTP_TEST_GRAPH_REPLAYS (at least 2: the first and the last).
int replays() {
  const char* text = std::getenv("ASYNCTP_TEST_GRAPH_REPLAYS");
  if (text == nullptr) return 1000;
  return std::max(2, std::atoi(text));
}

enum class Op { all_gather_matmul, matmul_reduce_scatter };

struct Case {
  Op op;
  Algorithm algorithm;
  NativeTail tail = NativeTail::automatic;
};

std::string describe(const Case& c) {
  return std::string(c.op == Op::all_gather_matmul ? "all_gather_matmul_" : "reduce_scatter_") +
         to_string(c.algorithm) + (c.tail == NativeTail::library ? "_library_tail" : "");
}
void PrintTo(const Case& c, std::ostream* out) { *out << describe(c); }

// The bytes of a device tensor (dense, row-major), for bitwise comparison.
std::vector<unsigned char> download(const TensorView& v) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(v.rows * v.cols) *
                                   element_size(v.dtype));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(bytes.data(), v.data, bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

// The test for either op: `problem` has prepare, poison_outputs,
// expect_all_correct and call(comm, options, stream); `output(r)` is rank
// r's output on the device.
template <class Problem, class Output>
void replay_thousand_times(const Case& c, Link link, Problem& problem, const Output& output) {
  cuda::LoopbackGroup group(lb::loopback_config(kWorld, link));
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(c.algorithm);
  options.native_tail = c.tail;
  const auto call = [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); };

  // 1. A direct call.
  lb::expect_all_ok(lb::run_ranks(group, streams, call, "direct call"), c.algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

  // 2. Every rank captures the same call.
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const lb::RankCaptures caps =
      lb::capture_every_rank(group, streams, cudaStreamCaptureModeThreadLocal, call);
  for (int r = 0; r < kWorld; ++r) {
    lb::RankCapture& cap = *caps[static_cast<std::size_t>(r)];
    ASSERT_EQ(cudaSuccess, cap.begin) << "rank " << r << ": " << cudaGetErrorName(cap.begin);
    ASSERT_TRUE(cap.call_ok) << "rank " << r << ": the call threw under capture: " << cap.message;
    EXPECT_EQ(c.algorithm, cap.info.algorithm) << cap.info.reason;
    ASSERT_EQ(cudaSuccess, cap.end) << "rank " << r << ": " << cudaGetErrorName(cap.end);
    CUDA_ASSERT(cudaGraphInstantiate(&cap.exec, cap.graph, 0));
  }
  // Capturing records work; it must not have run any.
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("after capture"));

  // 3. The first replay, against float64; its outputs are kept.
  CUDA_ASSERT(lb::launch_every_rank(caps, streams));
  streams.drain("replay 1");
  ASSERT_NO_FATAL_FAILURE(lb::expect_synchronize_clean(group, "replay 1"));
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  std::vector<std::vector<unsigned char>> first;
  for (int r = 0; r < kWorld; ++r) first.push_back(download(output(r)));

  // 4. Replays 2 .. n - 1, back to back.
  const int n = replays();
  CUDA_ASSERT(lb::launch_every_rank(caps, streams, n - 2));
  streams.drain("replays 2 .. " + std::to_string(n - 1));
  ASSERT_NO_FATAL_FAILURE(lb::expect_synchronize_clean(group, "replays"));

  // 5. The last replay on poisoned outputs: the same bytes as the first.
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  CUDA_ASSERT(lb::launch_every_rank(caps, streams));
  streams.drain("replay " + std::to_string(n));
  ASSERT_NO_FATAL_FAILURE(lb::expect_synchronize_clean(group, "last replay"));
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(download(output(r)) == first[static_cast<std::size_t>(r)])
        << "rank " << r << ": replay " << n << "'s output differs from replay 1's";
  }
  std::printf("  %s: %d replays of %d ranks' graphs, the last bitwise equal to the first\n",
              describe(c).c_str(), n, kWorld);
}

class LoopbackGraphReplay : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackGraphReplay, ThousandReplaysMatchTheFirst) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  auto rng = seed.rng();
  const Case& c = GetParam();
  SCOPED_TRACE(seed.note());
  const auto draw8 = [&](std::int64_t lo, std::int64_t hi) {
    return 8 * std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  if (c.op == Op::all_gather_matmul) {
    const asynctp_test::Shape shape =
        lb::loopback_shape(kWorld, 128, draw8(16, 32), draw8(16, 32), DType::bf16);
    SCOPED_TRACE(describe(c) + " " + shape.to_string());
    lb::print_case(seed, describe(c) + " " + shape.to_string());
    lb::LoopbackProblem problem(shape, rng);
    replay_thousand_times(c, Link::pcie, problem, [&](int r) { return problem.c(r); });
  } else {
    // Native's chunks are whole tiles of its kernel (256 rows); the library
    // algorithms take any rows.
    const std::int64_t rows = c.algorithm == Algorithm::native ? 256 : 64;
    asynctp_test::RsShape shape = asynctp_test::rs_shape(kWorld, rows, draw8(8, 24), 0);
    for (auto& k : shape.k) k = draw8(4, 16);  // uneven K-slices
    SCOPED_TRACE(describe(c) + " " + shape.to_string());
    lb::print_case(seed, describe(c) + " " + shape.to_string());
    asynctp_test::gpu::DeviceRsProblem problem(shape, rng);
    // Link::pcie refuses the capture (each rank's reduction would wait on
    // its peers' graphs); the arrival model's ranks wait on no one.
    replay_thousand_times(c, Link::arrival, problem, [&](int r) { return problem.out(r); });
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LoopbackGraphReplay,
                         ::testing::Values(Case{Op::all_gather_matmul, Algorithm::native},
                                           Case{Op::all_gather_matmul, Algorithm::native,
                                                NativeTail::library},
                                           Case{Op::all_gather_matmul, Algorithm::pipelined},
                                           Case{Op::all_gather_matmul, Algorithm::decomposed},
                                           Case{Op::matmul_reduce_scatter, Algorithm::native},
                                           Case{Op::matmul_reduce_scatter, Algorithm::pipelined},
                                           Case{Op::matmul_reduce_scatter, Algorithm::decomposed}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return describe(info.param);
                         });

}  // namespace
}  // namespace asynctp
