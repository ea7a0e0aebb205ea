// fused_matmul_reduce_scatter on the NCCL transport (decomposed: one cuBLAS
// GEMM, then ncclReduceScatter), against float64 with poisoned outputs and
// core::nccl_reduce_scatter_error_tolerance (NCCL's ring rounds each step's
// partial sum to the dtype):
//
//   NcclReduceScatter.WorldOfOne
//       W = 1: bf16/fp16/fp32 x B row/col-major, forced decomposed and auto
//       (which plans decomposed, naming why); forced pipelined and forced
//       native are Error(unsupported) naming why, outputs untouched; a graph
//       of an uncaptured-first call replays with fresh inputs.
//   NcclReduceScatterMulti/W.EveryDtypeAndLayout
//       W = 2, 4, 8 ranks on W GPUs (skip when fewer), random shapes with
//       uneven K-slices, two rounds each.
#include <gtest/gtest.h>

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

// Two rounds of `algorithm` on fresh inputs, every rank checked.
void expect_correct(nccl::LocalGroup& group, const RsShape& shape, Algorithm algorithm,
                    std::mt19937_64& rng) {
  const int world = shape.world;
  SCOPED_TRACE(shape.to_string() + " " + to_string(algorithm));
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
  DeviceRsProblem problem(shape, rng, nt::first_devices(world));
  problem.set_tolerance(core::nccl_reduce_scatter_error_tolerance(shape.dtype, world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(algorithm);
  for (int round = 0; round < 2; ++round) {
    if (round > 0) {
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    }
    const auto results = run(group, streams, problem, options, "round " + std::to_string(round));
    lb::expect_all_ok(results, Algorithm::decomposed);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

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
      ASSERT_NO_FATAL_FAILURE(expect_correct(group, shape, Algorithm::decomposed, rng));
      ASSERT_NO_FATAL_FAILURE(expect_correct(group, shape, Algorithm::automatic, rng));
    }
  }

  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(1, {0}));
  DeviceRsProblem problem(asynctp_test::rs_shape(1, 256, 264, 128), rng, {0});
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const struct {
    Algorithm algorithm;
    const char* reason;
  } refused[] = {
      {Algorithm::pipelined, "decomposed only"},
      {Algorithm::native, "the native reduce-scatter kernel (a tile-completion signal in the "
                          "CUTLASS epilogue) is not built yet"},
  };
  for (const auto& r : refused) {
    const auto results = run(group, streams, problem, lb::options_for(r.algorithm), "refused");
    EXPECT_FALSE(results[0].call_ok) << to_string(r.algorithm);
    EXPECT_EQ(ErrorCode::unsupported, results[0].code.value_or(ErrorCode::backend))
        << results[0].message;
    EXPECT_TRUE(lb::contains(results[0].message, r.reason)) << results[0].message;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("refused algorithms"));

  // Capture after one uncaptured call of the same shape, then replays.
  const Options options = lb::options_for(Algorithm::decomposed);
  lb::expect_all_ok(run(group, streams, problem, options, "direct"), Algorithm::decomposed);
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
      ASSERT_NO_FATAL_FAILURE(
          expect_correct(group, random_shape(world, dtype, col, rng), Algorithm::automatic, rng));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(W, NcclReduceScatterMulti, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "W" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace asynctp
