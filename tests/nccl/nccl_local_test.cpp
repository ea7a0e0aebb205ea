// The NCCL transport with every rank in this process (asynctp::nccl::
// LocalGroup, ncclCommInitAll), checked against float64 with poisoned outputs:
//
//   NcclLocal.WorldOfOne...        one rank on GPU 0 (runs on a one-GPU
//                                  machine): every algorithm, both B layouts,
//                                  with and without the gathered output; a
//                                  CUDA graph captured after one direct call
//                                  and replayed with fresh inputs; a capture
//                                  as the very first call refused, naming
//                                  options.stream, outputs untouched.
//   NcclLocalMulti/W.*             W = 2, 4, 8 ranks on W GPUs (skip when
//                                  fewer): every algorithm x layout at random
//                                  shapes, graph replays, a dropped chunk's
//                                  timeout naming the chunk on the native path
//                                  (and the group still working after), bad
//                                  input on one rank failing every rank.
//   NcclLocal.BadDeviceLists       two ranks on one GPU, a GPU that is not
//                                  there: clear errors before any NCCL call.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "nccl/nccl_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::Shape;
namespace lb = asynctp_test::loopback;
namespace nt = asynctp_test::nccl;

const Algorithm kAlgorithms[] = {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed,
                                 Algorithm::automatic};

TEST(NcclLocal, WorldOfOneEveryAlgorithmLayoutAndOutput) {
  ASYNCTP_REQUIRE_GPUS(1, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(1);
  EXPECT_EQ(1, group.world_size());
  EXPECT_STREQ("cuda-nccl", group.comm(0).backend_name());
  int i = 0;
  for (const Algorithm algorithm : kAlgorithms) {
    for (const bool col : {false, true}) {
      const bool gathered = (i++ % 2) == 0;
      const Shape shape = lb::loopback_shape(
          1, 512, 8 * std::uniform_int_distribution<int>(16, 64)(rng),
          8 * std::uniform_int_distribution<int>(16, 64)(rng), DType::bf16, col, gathered);
      ASSERT_NO_FATAL_FAILURE(nt::expect_correct_call(group, shape, algorithm, rng, "W=1"));
    }
  }
}

TEST(NcclLocal, WorldOfOneGraphReplaysWithFreshInputs) {
  ASYNCTP_REQUIRE_GPUS(1, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(1);
  for (const Algorithm algorithm : {Algorithm::native, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    const Shape shape = lb::loopback_shape(1, 256, 384, 512);
    lb::RankStreams streams;
    CUDA_ASSERT(streams.create(1, {0}));
    lb::LoopbackProblem problem(shape, rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const Options options = lb::options_for(algorithm);
    // A direct call first: the ranks agree on the call and the workspace grows.
    lb::expect_all_ok(lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "direct"));
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
    for (int replay = 0; replay < 20; ++replay) {
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
}

TEST(NcclLocal, CaptureAsTheFirstCallIsRefused) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  lb::CleanPlannerEnv env;
  const Seed seed;
  auto rng = seed.rng();
  nccl::LocalGroup group(1);
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(1, {0}));
  lb::LoopbackProblem problem(lb::loopback_shape(1, 256, 256, 256), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  CUDA_ASSERT(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
  std::string error;
  try {
    problem.call(group.comm(0), lb::options_for(Algorithm::decomposed), streams[0]);
  } catch (const Error& e) {
    error = e.what();
  }
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(streams[0], &graph);
  if (graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  EXPECT_NE(std::string::npos, error.find("options.stream")) << error;
  EXPECT_NE(std::string::npos, error.find("uncaptured first")) << error;
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("refused capture"));
}

TEST(NcclLocal, BadDeviceListsAreClearErrors) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  try {
    nccl::LocalGroup group(2, {0, 0});
    FAIL() << "two ranks on GPU 0 were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("devices: ranks 0 and 1 both name GPU 0"))
        << e.what();
  }
  try {
    nccl::LocalGroup group(1, {nt::gpu_count()});
    FAIL() << "a GPU that is not there was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("devices: rank 0 names GPU"))
        << e.what();
  }
  try {
    nccl::LocalGroup group(0);
    FAIL() << "world size 0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("world_size: must be at least 1"))
        << e.what();
  }
}

class NcclLocalMulti : public ::testing::TestWithParam<int> {};

TEST_P(NcclLocalMulti, EveryAlgorithmAndLayoutAtRandomShapes) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  for (const Algorithm algorithm : kAlgorithms) {
    for (const bool col : {false, true}) {
      // m: several tiles per chunk for native (256-row granularity);
      // n, k: any multiple of 8.
      const std::int64_t m = 256 * std::uniform_int_distribution<int>(1, 4)(rng);
      const Shape shape = lb::loopback_shape(
          world, m, 8 * std::uniform_int_distribution<int>(8, 96)(rng),
          8 * std::uniform_int_distribution<int>(8, 96)(rng), DType::bf16, col, col);
      ASSERT_NO_FATAL_FAILURE(nt::expect_correct_call(group, shape, algorithm, rng, "multi"));
    }
  }
}

TEST_P(NcclLocalMulti, GraphReplaysWithFreshInputs) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  for (const Algorithm algorithm :
       {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    lb::RankStreams streams;
    CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
    lb::LoopbackProblem problem(lb::loopback_shape(world, 512, 640, 768), rng);
    problem.set_devices(nt::first_devices(world));
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const Options options = lb::options_for(algorithm);
    lb::expect_all_ok(lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "direct"));
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

    std::vector<cudaGraphExec_t> execs(static_cast<std::size_t>(world), nullptr);
    std::vector<std::string> errors(static_cast<std::size_t>(world));
    lb::run_group_bounded(
        group,
        [&](Comm& comm) {
          const int r = comm.rank();
          cudaGraph_t graph = nullptr;
          if (cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            errors[static_cast<std::size_t>(r)] = "begin capture failed";
            return;
          }
          try {
            problem.call(comm, options, streams[r]);
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
          }
          if (cudaStreamEndCapture(streams[r], &graph) != cudaSuccess || !graph) {
            errors[static_cast<std::size_t>(r)] += " (end capture failed)";
            return;
          }
          if (cudaGraphInstantiate(&execs[static_cast<std::size_t>(r)], graph, 0) != cudaSuccess) {
            errors[static_cast<std::size_t>(r)] += " (instantiate failed)";
          }
          (void)cudaGraphDestroy(graph);
        },
        "capture");
    for (int r = 0; r < world; ++r)
      ASSERT_EQ("", errors[static_cast<std::size_t>(r)]) << "rank " << r;
    for (int replay = 0; replay < 10; ++replay) {
      SCOPED_TRACE("replay " + std::to_string(replay));
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
      // Each rank replays its own graph; the ranks meet in the barriers.
      for (int r = 0; r < world; ++r) {
        CUDA_ASSERT(cudaSetDevice(r));
        CUDA_ASSERT(cudaGraphLaunch(execs[static_cast<std::size_t>(r)], streams[r]));
      }
      streams.drain("replay");
      lb::run_group_bounded(
          group, [](Comm& comm) { synchronize(comm); }, "synchronize");
      ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
    }
    for (cudaGraphExec_t e : execs) (void)cudaGraphExecDestroy(e);
  }
}

TEST_P(NcclLocalMulti, DroppedChunkTimesOutNamingItAndTheGroupRecovers) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
  lb::LoopbackProblem problem(lb::loopback_shape(world, 256, 256, 256), rng);
  problem.set_devices(nt::first_devices(world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(Algorithm::native);
  options.wait_timeout_ms = 300;
  const int victim = world - 1;  // rank 0 never receives this chunk
  options.hooks.drop = [victim](int rank, int chunk) { return rank == 0 && chunk == victim; };
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "dropped chunk");
  ASSERT_FALSE(results[0].ok()) << "rank 0 lost chunk " << victim << " and did not notice";
  EXPECT_EQ("synchronize", results[0].stage);
  EXPECT_NE(std::string::npos, results[0].message.find("chunk " + std::to_string(victim)))
      << results[0].message;
  for (int r = 1; r < world; ++r) EXPECT_TRUE(results[static_cast<std::size_t>(r)].ok()) << r;
  // The barriers kept the ranks in step: the next call works everywhere.
  ASSERT_NO_FATAL_FAILURE(nt::expect_correct_call(group, lb::loopback_shape(world, 256, 256, 256),
                                                  Algorithm::native, rng, "after the timeout"));
}

TEST_P(NcclLocalMulti, BadInputOnOneRankFailsEveryRank) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, false);
  lb::CleanPlannerEnv env;
  const Seed seed;
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
  lb::LoopbackProblem problem(lb::loopback_shape(world, 256, 256, 256), rng);
  problem.set_devices(nt::first_devices(world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const Options options = lb::options_for(Algorithm::decomposed);
  const auto results = lb::run_ranks(
      group, streams,
      [&](Comm& comm, cudaStream_t s) {
        Options o = options;
        o.stream = s;
        TensorView c = problem.c(comm.rank());
        if (comm.rank() == 1) {  // wrong n for its B
          c.cols -= 8;
          c.row_stride = c.cols;
        }
        const TensorView g = problem.g(comm.rank());
        return fused_all_gather_matmul(comm, problem.a(comm.rank()), problem.b(comm.rank()), c, &g,
                                       o);
      },
      "bad input on rank 1");
  for (int r = 0; r < world; ++r) {
    EXPECT_FALSE(results[static_cast<std::size_t>(r)].call_ok) << "rank " << r << " went ahead";
    EXPECT_NE(std::string::npos, results[static_cast<std::size_t>(r)].message.find("c_out"))
        << "rank " << r << ": " << results[static_cast<std::size_t>(r)].message;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("bad input"));
  ASSERT_NO_FATAL_FAILURE(nt::expect_correct_call(group, lb::loopback_shape(world, 256, 256, 256),
                                                  Algorithm::decomposed, rng, "after bad input"));
}

INSTANTIATE_TEST_SUITE_P(W, NcclLocalMulti, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param);
                         });

}  // namespace
}  // namespace asynctp
