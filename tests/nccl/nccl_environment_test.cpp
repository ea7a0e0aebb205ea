// asynctp::nccl::comm_from_environment: one process per rank, as torchrun,
// mpirun or srun start them.
//
//   NcclEnvironment.*        in this process: no launcher variables (no GPU
//                            needed: the error comes first); a world of one
//                            through the whole path (rendezvous, NCCL init,
//                            calls checked vs float64); two ranks naming one
//                            GPU refused on both; a local rank past several
//                            GPUs (2 or more visible).
//   NcclProcesses/W.*        W = 1, 2, 4, 8 child processes of this test
//                            binary, each one rank (RANK, WORLD_SIZE,
//                            LOCAL_RANK, MASTER_ADDR, MASTER_PORT set as
//                            torchrun sets them, MASTER_PORT held by this
//                            process as torchrun's TCPStore holds it), each
//                            checking its own C for
//                            every algorithm; skip when fewer than W GPUs.
//                            Bounded: a child still running after 180 s is
//                            killed and the test fails.
//   NcclProcessChild.Run     the child's body; skips unless started so.
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous_support.hpp"
#include "cuda/nccl/environment_comm.hpp"
#include "nccl/child_process.hpp"
#include "nccl/nccl_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::ScopedEnv;
using asynctp_test::Seed;
namespace lb = asynctp_test::loopback;
namespace nt = asynctp_test::nccl;

using asynctp::bootstrap::test::free_port;

bootstrap::LaunchInfo launch(int rank, int world, int local_rank, int port) {
  bootstrap::LaunchInfo info;
  info.launcher = "test";
  info.rank = rank;
  info.world_size = world;
  info.local_rank = local_rank;
  info.master_addr = "127.0.0.1";
  info.rendezvous_port = port;
  info.rendezvous_port_source = bootstrap::kRendezvousPortVariable;
  return info;
}

TEST(NcclEnvironment, NoLauncherVariablesIsAClearError) {
  std::vector<std::unique_ptr<ScopedEnv>> cleared;
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
    cleared.push_back(std::make_unique<ScopedEnv>(name, std::nullopt));
  }
  try {
    (void)nccl::comm_from_environment();
    FAIL() << "a communicator without a launcher";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("environment: no launcher variables"))
        << e.what();
  }
}

TEST(NcclEnvironment, WorldOfOneThroughTheWholePath) {
  ASYNCTP_REQUIRE_GPUS(1, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  std::unique_ptr<Comm> comm =
      nccl::comm_from_launch_info(launch(0, 1, 0, free_port()), nccl::EnvironmentOptions{});
  ASSERT_EQ(0, comm->rank());
  ASSERT_EQ(1, comm->world_size());
  for (const Algorithm algorithm : {Algorithm::native, Algorithm::decomposed}) {
    lb::RankStreams streams;
    CUDA_ASSERT(streams.create(1, {0}));
    lb::LoopbackProblem problem(lb::loopback_shape(1, 512, 320, 448), rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const RunInfo info = problem.call(*comm, lb::options_for(algorithm), streams[0]);
    EXPECT_EQ(algorithm, info.algorithm) << info.reason;
    synchronize(*comm);
    streams.drain("world of one");
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

TEST(NcclEnvironment, TwoRanksOnOneGpuAreRefusedOnBoth) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  const int port = free_port();
  std::string errors[2];
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        nccl::EnvironmentOptions options;
        options.rendezvous_timeout_ms = 20'000;
        (void)nccl::comm_from_launch_info(launch(r, 2, 0, port), options);
        errors[r] = "accepted";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(std::string::npos, errors[r].find("LOCAL_RANK: ranks 0 and 1 would both use GPU-"))
        << "rank " << r << ": " << errors[r];
    EXPECT_NE(std::string::npos, errors[r].find("each rank needs its own GPU")) << errors[r];
  }
}

TEST(NcclEnvironment, LocalRankPastSeveralGpusIsAClearError) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  const int count = nt::gpu_count();
  if (count < 2) {
    GTEST_SKIP() << "one GPU visible: every LOCAL_RANK uses it (nccl_one_gpu_per_process_test)";
  }
  try {
    (void)nccl::comm_from_launch_info(launch(0, 1, count, free_port()), {});
    FAIL() << "local rank " << count << " accepted with " << count << " GPUs";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    const std::string c = std::to_string(count);
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("LOCAL_RANK: " + c + " names GPU " + c +
                                         ", but this process sees " + c + " GPUs"))
        << e.what();
  }
}

// ---------------------------------------------------------------------------
// One process per rank

constexpr const char* kChildVariable = "ASYNCTP_TEST_NCCL_CHILD";

TEST(NcclProcessChild, Run) {
  const char* seed_text = std::getenv(kChildVariable);
  if (!seed_text) GTEST_SKIP() << "runs only as a child of NcclProcesses";
  lb::CleanPlannerEnv env;
  std::unique_ptr<Comm> comm = nccl::comm_from_environment();
  const int rank = comm->rank();
  const int world = comm->world_size();
  int device = 0;
  CUDA_ASSERT(cudaGetDevice(&device));
  // Every process draws the same problem; each rank checks its own C.
  std::mt19937_64 rng(std::strtoull(seed_text, nullptr, 10));
  for (const Algorithm algorithm :
       {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed, Algorithm::automatic}) {
    SCOPED_TRACE(std::string("rank ") + std::to_string(rank) + " " + to_string(algorithm));
    lb::LoopbackProblem problem(lb::loopback_shape(world, 512, 384, 640), rng);
    problem.set_devices(std::vector<int>(static_cast<std::size_t>(world), device));
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    lb::RankStreams streams;
    CUDA_ASSERT(streams.create(1, {device}));
    const RunInfo info = problem.call(*comm, lb::options_for(algorithm), streams[0]);
    if (algorithm != Algorithm::automatic) {
      EXPECT_EQ(algorithm, info.algorithm) << info.reason;
    }
    synchronize(*comm);
    streams.drain("child");
    ASSERT_NO_FATAL_FAILURE(problem.expect_correct(rank));
  }
}

class NcclProcesses : public ::testing::TestWithParam<int> {};

TEST_P(NcclProcesses, EachRankItsOwnProcess) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, true);
  const Seed seed;
  SCOPED_TRACE(seed.note());
  // MASTER_PORT held, as torchrun's TCPStore holds it: the ranks meet on
  // the default rendezvous port, MASTER_PORT + 1.
  bootstrap::test::Fd store;
  const int port = bootstrap::test::held_port_with_free_successor(&store);
  ASSERT_GT(port, 0);
  std::vector<nt::Child> children;
  for (int r = 0; r < world; ++r) {
    children.push_back(
        nt::spawn_self("NcclProcessChild.Run",
                       {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world),
                        "LOCAL_RANK=" + std::to_string(r), "MASTER_ADDR=127.0.0.1",
                        "MASTER_PORT=" + std::to_string(port),
                        std::string(kChildVariable) + "=" + std::to_string(seed.value)},
                       "nccl_child_" + std::to_string(r) + ".log"));
  }
  const auto results = nt::wait_children(children, 180);
  for (std::size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].finished) << "rank " << r << " still running after 180 s (killed):\n"
                                     << results[r].log_text;
    EXPECT_TRUE(results[r].passed) << "rank " << r << " failed or did not run its test:\n"
                                   << results[r].log_text;
  }
}

INSTANTIATE_TEST_SUITE_P(W, NcclProcesses, ::testing::Values(1, 2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param);
                         });

}  // namespace
}  // namespace asynctp
