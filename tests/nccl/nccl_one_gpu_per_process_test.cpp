// One GPU per process, as srun --gpus-per-task=1 (or any launcher that sets
// CUDA_VISIBLE_DEVICES per process) starts ranks: LOCAL_RANK still counts
// the node's processes, but each process sees one GPU, device 0, and its
// rank must run there, saying so in the log (ASYNCTP_DEBUG=INFO).
//
//   NcclOneGpuPerProcess.LocalRank3SeesOneGpu     1 GPU: one child process, rank 0 of 1
//                                                 with LOCAL_RANK=3 and
//                                                 CUDA_VISIBLE_DEVICES = the first GPU,
//                                                 through comm_from_environment: on
//                                                 device 0, one call (auto) correct, and
//                                                 the INFO line in its log
//   NcclOneGpuPerProcess.TwoRanksOnIsolatedGpus   2 GPUs: two children, each seeing only
//                                                 its own GPU (LOCAL_RANK 0 and 1): both
//                                                 on their device 0, the rendezvous tells
//                                                 their GPUs apart by UUID, one call
//                                                 (auto) correct on each
//   NcclOneGpuPerProcessChild.Run                 the children's body; skips unless
//                                                 started so
// Bounded: a child still running after 120 s is killed and the test fails.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_support.hpp"
#include "nccl/child_process.hpp"
#include "nccl/nccl_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
namespace lb = asynctp_test::loopback;
namespace nt = asynctp_test::nccl;

constexpr const char* kChildVariable = "ASYNCTP_TEST_ONE_GPU_CHILD";
constexpr double kChildLimitS = 120;

// The CUDA_VISIBLE_DEVICES entry of each GPU this process sees.
std::vector<std::string> visible_gpu_names() {
  std::vector<std::string> names;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string list = v;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) names.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  } else {
    for (int d = 0; d < nt::gpu_count(); ++d) names.push_back(std::to_string(d));
  }
  return names;
}

TEST(NcclOneGpuPerProcessChild, Run) {
  const char* seed_text = std::getenv(kChildVariable);
  if (!seed_text) GTEST_SKIP() << "runs only as a child of NcclOneGpuPerProcess";
  lb::CleanPlannerEnv env;
  ASSERT_EQ(1, nt::gpu_count()) << "the parent gives this process one GPU";
  std::unique_ptr<Comm> comm = nccl::comm_from_environment();
  int device = -1;
  CUDA_ASSERT(cudaGetDevice(&device));
  EXPECT_EQ(0, device);
  const int rank = comm->rank();
  const int world = comm->world_size();
  std::mt19937_64 rng(std::strtoull(seed_text, nullptr, 10));
  lb::LoopbackProblem problem(lb::loopback_shape(world, 512, 384, 640), rng);
  problem.set_devices(std::vector<int>(static_cast<std::size_t>(world), device));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(1, {device}));
  const RunInfo info = problem.call(*comm, lb::options_for(Algorithm::automatic), streams[0]);
  std::printf("rank %d of %d on device %d: %s (%s)\n", rank, world, device,
              to_string(info.algorithm), info.reason.c_str());
  synchronize(*comm);
  streams.drain("child");
  ASSERT_NO_FATAL_FAILURE(problem.expect_correct(rank));
}

// The INFO line comm_from_environment logs when LOCAL_RANK is not the device.
std::string info_line(int local_rank) {
  return "asynctp INFO LOCAL_RANK " + std::to_string(local_rank) + " but this process sees one GPU";
}

TEST(NcclOneGpuPerProcess, LocalRank3SeesOneGpu) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::vector<std::string> gpus = visible_gpu_names();
  ASSERT_FALSE(gpus.empty());
  const nt::Child child = nt::spawn_self(
      "NcclOneGpuPerProcessChild.Run",
      {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=3", "CUDA_VISIBLE_DEVICES=" + gpus[0],
       "ASYNCTP_DEBUG=INFO", std::string(kChildVariable) + "=" + std::to_string(seed.value)},
      "one_gpu_local_rank_3.log");
  const nt::ChildResult r = nt::wait_children({child}, kChildLimitS)[0];
  ASSERT_TRUE(r.finished) << "still running after " << kChildLimitS << " s (killed):\n"
                          << r.log_text;
  EXPECT_TRUE(r.passed) << r.log_text;
  EXPECT_NE(std::string::npos, r.log_text.find(info_line(3))) << r.log_text;
  EXPECT_NE(std::string::npos, r.log_text.find("using it, device 0")) << r.log_text;
}

TEST(NcclOneGpuPerProcess, TwoRanksOnIsolatedGpus) {
  constexpr int kWorld = 2;
  ASYNCTP_REQUIRE_GPUS(kWorld, false);
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::vector<std::string> gpus = visible_gpu_names();
  ASSERT_GE(gpus.size(), static_cast<std::size_t>(kWorld));
  asynctp::bootstrap::test::Fd store;  // MASTER_PORT held, as torchrun's TCPStore holds it
  const int port = asynctp::bootstrap::test::held_port_with_free_successor(&store);
  ASSERT_GT(port, 0);
  std::vector<nt::Child> children;
  for (int r = 0; r < kWorld; ++r) {
    children.push_back(nt::spawn_self(
        "NcclOneGpuPerProcessChild.Run",
        {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(kWorld),
         "LOCAL_RANK=" + std::to_string(r),
         "CUDA_VISIBLE_DEVICES=" + gpus[static_cast<std::size_t>(r)], "MASTER_ADDR=127.0.0.1",
         "MASTER_PORT=" + std::to_string(port), "ASYNCTP_DEBUG=INFO",
         std::string(kChildVariable) + "=" + std::to_string(seed.value)},
        "one_gpu_rank_" + std::to_string(r) + ".log"));
  }
  const auto results = nt::wait_children(children, kChildLimitS);
  for (int r = 0; r < kWorld; ++r) {
    const nt::ChildResult& c = results[static_cast<std::size_t>(r)];
    EXPECT_TRUE(c.finished) << "rank " << r << " still running (killed):\n" << c.log_text;
    EXPECT_TRUE(c.passed) << "rank " << r << ":\n" << c.log_text;
  }
  EXPECT_EQ(std::string::npos, results[0].log_text.find(info_line(0))) << results[0].log_text;
  EXPECT_NE(std::string::npos, results[1].log_text.find(info_line(1))) << results[1].log_text;
}

}  // namespace
}  // namespace asynctp
