// fused_matmul_reduce_scatter on the NCCL transport (decomposed: one cuBLAS
// GEMM, then ncclReduceScatter; pipelined: per-chunk GEMMs pushing partials
// into the owners' symmetric slots, then the reduction kernel), against
// float64 with poisoned outputs, every element within its error bound
// (verify::check_matmul_reduce_scatter): decomposed with
// PartialSum::output_dtype (NCCL's ring rounds each step's running sum to the
// dtype), pipelined with PartialSum::fp32.
//
//   NcclReduceScatter.WorldOfOne
//       W = 1: bf16/fp16/fp32 x B row/col-major x decomposed, pipelined and
//       auto (decomposed); native (bf16, 256 rows, both B layouts) correct,
//       and refused off its tile grid with the rule, outputs untouched; a
//       graph of an uncaptured-first call replays with fresh inputs, for all
//       three algorithms.
//   NcclReduceScatterMulti/W.EveryDtypeAndLayout
//       W = 2, 4, 8 ranks on W GPUs (skip when fewer), random shapes with
//       uneven K-slices, decomposed and auto (pipelined within one NVLink
//       domain), two rounds each.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/reduce_scatter_support.hpp"
#include "nccl/nccl_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::RsShape;
using asynctp_test::Seed;
using asynctp_test::gpu::DeviceRsProblem;
namespace lb = asynctp_test::loopback;
namespace nt = asynctp_test::nccl;

std::int64_t draw(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

RsShape random_shape(int world, DType dtype, bool col, std::mt19937_64& rng) {
  RsShape s;
  s.world = world;
  s.dtype = dtype;
  s.b_col_major = col;
  s.m = draw(rng, 1, 300);
  s.n = draw(rng, 1, 400);
  for (int r = 0; r < world; ++r) s.k.push_back(draw(rng, 1, 400));
  return s;
}

std::vector<lb::RankResult> run(nccl::LocalGroup& group, const lb::RankStreams& streams,
                                const DeviceRsProblem& problem, const Options& options,
                                const std::string& what) {
  return lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      what);
}

// How the algorithm that ran sums its partials: the decomposed path is
// NCCL's reduce-scatter, whose ring stores running sums in the dtype.
verify::PartialSum partial_sum_of(Algorithm ran) {
  return ran == Algorithm::decomposed ? verify::PartialSum::output_dtype : verify::PartialSum::fp32;
}

// Two rounds of `algorithm` on fresh inputs, every rank checked; `expected`
// is what must run (auto's choice).
void expect_correct(nccl::LocalGroup& group, const RsShape& shape, Algorithm algorithm,
                    std::optional<Algorithm> expected, std::mt19937_64& rng) {
  const int world = shape.world;
  SCOPED_TRACE(shape.to_string() + " " + to_string(algorithm));
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
  DeviceRsProblem problem(shape, rng, nt::first_devices(world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(algorithm);
  for (int round = 0; round < 2; ++round) {
    if (round > 0) {
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    }
    const auto results = run(group, streams, problem, options, "round " + std::to_string(round));
    lb::expect_all_ok(results, expected);
    if (!results[0].ok()) return;
    std::printf("  %s -> %s: %s\n", shape.to_string().c_str(), to_string(results[0].info.algorithm),
                results[0].info.reason.c_str());
    problem.set_partial_sum(partial_sum_of(results[0].info.algorithm));
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

void expect_graph_replays(nccl::LocalGroup& group, const lb::RankStreams& streams,
                          DeviceRsProblem& problem, Algorithm algorithm, std::mt19937_64& rng);

TEST(NcclReduceScatter, WorldOfOne) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(1);
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (bool col : {false, true}) {
      const RsShape shape = random_shape(1, dtype, col, rng);
      for (Algorithm a : {Algorithm::decomposed, Algorithm::pipelined}) {
        ASSERT_NO_FATAL_FAILURE(expect_correct(group, shape, a, a, rng));
      }
      ASSERT_NO_FATAL_FAILURE(
          expect_correct(group, shape, Algorithm::automatic, Algorithm::decomposed, rng));
    }
  }

  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(1, {0}));
  DeviceRsProblem problem(asynctp_test::rs_shape(1, 256, 264, 128), rng, {0});
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  // Native on its tile grid (256 rows, n and k multiples of 8), both B
  // layouts; off the grid it is refused with the rule, outputs untouched.
  for (bool col : {false, true}) {
    ASSERT_NO_FATAL_FAILURE(
        expect_correct(group, asynctp_test::rs_shape(1, 256, 264, 128, DType::bf16, col),
                       Algorithm::native, Algorithm::native, rng));
  }
  {
    DeviceRsProblem off_grid(asynctp_test::rs_shape(1, 200, 264, 128), rng, {0});
    ASSERT_NO_FATAL_FAILURE(off_grid.prepare());
    const auto results =
        run(group, streams, off_grid, lb::options_for(Algorithm::native), "native off grid");
    EXPECT_FALSE(results[0].call_ok);
    EXPECT_EQ(ErrorCode::unsupported, results[0].code.value_or(ErrorCode::backend))
        << results[0].message;
    EXPECT_TRUE(lb::contains(results[0].message, "is not a multiple of the native tile M"))
        << results[0].message;
    ASSERT_NO_FATAL_FAILURE(off_grid.expect_all_outputs_untouched("forced native off grid"));
  }
  for (Algorithm algorithm : {Algorithm::decomposed, Algorithm::pipelined, Algorithm::native}) {
    SCOPED_TRACE(std::string("graph ") + to_string(algorithm));
    ASSERT_NO_FATAL_FAILURE(expect_graph_replays(group, streams, problem, algorithm, rng));
  }
}

// Capture after one uncaptured call of the same shape, then replays with
// fresh inputs.
void expect_graph_replays(nccl::LocalGroup& group, const lb::RankStreams& streams,
                          DeviceRsProblem& problem, Algorithm algorithm, std::mt19937_64& rng) {
  const Options options = lb::options_for(algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  lb::expect_all_ok(run(group, streams, problem, options, "direct"), algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_ASSERT(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
  std::string error;
  try {
    problem.call(group.comm(0), options, streams[0]);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CUDA_ASSERT(cudaStreamEndCapture(streams[0], &graph));
  ASSERT_EQ("", error) << "the call threw under capture";
  CUDA_ASSERT(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 5; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
    ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    CUDA_ASSERT(cudaGraphLaunch(exec, streams[0]));
    streams.drain("replay");
    EXPECT_NO_THROW(synchronize(group.comm(0)));
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
}

class NcclReduceScatterMulti : public ::testing::TestWithParam<int> {};

TEST_P(NcclReduceScatterMulti, EveryDtypeAndLayout) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, false);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (bool col : {false, true}) {
      const RsShape shape = random_shape(world, dtype, col, rng);
      ASSERT_NO_FATAL_FAILURE(
          expect_correct(group, shape, Algorithm::decomposed, Algorithm::decomposed, rng));
      ASSERT_NO_FATAL_FAILURE(
          expect_correct(group, shape, Algorithm::automatic, std::nullopt, rng));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(W, NcclReduceScatterMulti, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "W" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace asynctp
