// The NCCL transport when something goes wrong, checked for bounded waits
// and clear errors rather than hangs:
//
//   NcclFailure.AgreementThatCannotCompleteTimesOutAndAborts   one GPU, in
//       a child process: the agreement all-gather is held behind a stream
//       wait that is released only after the call returned; the call must
//       give up within its wait timeout, name the agreement, abort the
//       communicator, refuse the next call, and the process must still tear
//       down (bounded).
//   NcclFailureMulti/W.ARankThatNeverCallsEndsInATimeoutNotAHang   W ranks
//       on W GPUs, the last of which never calls: every other rank's call
//       ends in a timeout naming the agreement, within its wait timeout.
//   NcclGrowth/W.WorkspaceGrowsBetweenCallsOnANonBlockingStream   W = 1, 2,
//       4, 8: native calls whose shapes grow the symmetric workspace
//       between them, on non-blocking streams: the barrier's generation is
//       reset in stream order, so no barrier waits for a generation its
//       peers never write (which would end in a barrier timeout).
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/resources.hpp"
#include "gpu/stream_memops.hpp"
#include "nccl/nccl_support.hpp"

extern char** environ;

namespace asynctp {
namespace {

using asynctp_test::Seed;
namespace lb = asynctp_test::loopback;
namespace nt = asynctp_test::nccl;

constexpr std::int64_t kShortTimeoutMs = 500;

struct ChildOutcome {
  bool finished = false;  // exited (or crashed) within the limit
  bool passed = false;    // exited 0 after running its one test
  std::string output;
};

// Runs this test binary again, filtered to `test`, with `variable` set,
// output to `log`; kills it past limit_s.
ChildOutcome run_child(const std::string& test, const std::string& variable, const std::string& log,
                       double limit_s) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(variable);
  std::vector<char*> envp;
  for (std::string& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  const std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=" + test;
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ChildOutcome out;
  if (rc != 0) {
    out.output = "posix_spawn failed";
    return out;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      out.finished = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!out.finished) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  out.output = text.str();
  out.passed = out.finished && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
               out.output.find("[  PASSED  ] 1 test") != std::string::npos;
  return out;
}

// Destroys the group on another thread, bounded: a destructor that waits on
// an aborted peer must not hang the test binary.
void destroy_bounded(std::unique_ptr<nccl::LocalGroup> group, double limit_s) {
  if (!group) return;
  auto done = std::async(std::launch::async, [g = std::move(group)]() mutable { g.reset(); });
  if (done.wait_for(std::chrono::duration<double>(limit_s)) != std::future_status::ready) {
    ADD_FAILURE() << "destroying the group took more than " << limit_s << " s";
    std::_Exit(1);  // the destructor is stuck: nothing else here can be trusted
  }
}

constexpr const char* kGateChildVariable = "ASYNCTP_TEST_AGREEMENT_GATE_CHILD";

// The child half of AgreementThatCannotCompleteTimesOutAndAborts: in its own
// process, since releasing work queued behind an aborted communicator (and
// tearing it down) is exactly what the parent must be able to survive.
TEST(NcclFailureChild, AgreementGate) {
  if (!std::getenv(kGateChildVariable)) GTEST_SKIP() << "runs only as a child of NcclFailure";
  lb::CleanPlannerEnv env;
  std::mt19937_64 rng(std::strtoull(std::getenv(kGateChildVariable), nullptr, 10));
  auto group = std::make_unique<nccl::LocalGroup>(1);
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(1, {0}));
  lb::LoopbackProblem problem(lb::loopback_shape(1, 256, 256, 256), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());

  // The caller's stream waits on a host word that is set only after the
  // call returned: the agreement's all-gather, enqueued behind it, cannot
  // complete within the call.
  gpu::MappedWords gate(1, "mapped word (test gate)");
  gpu::wait_value32_equal(streams[0], gate.device(), 1);
  Options options = lb::options_for(Algorithm::decomposed);
  options.wait_timeout_ms = kShortTimeoutMs;
  std::string error;
  ErrorCode code = ErrorCode::backend;
  std::printf("CALLING with the stream held\n");
  std::fflush(stdout);
  const auto begin = std::chrono::steady_clock::now();
  try {
    problem.call(group->comm(0), options, streams[0]);
  } catch (const Error& e) {
    error = e.what();
    code = e.code();
  }
  const double waited_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::printf("AGREEMENT-TIMEOUT code=%d waited_ms=%.0f error=%s\n", static_cast<int>(code),
              waited_ms, error.c_str());
  std::fflush(stdout);
  EXPECT_EQ(ErrorCode::timeout, code) << error;
  EXPECT_NE(std::string::npos, error.find("agreement")) << error;
  EXPECT_NE(std::string::npos, error.find("aborted")) << error;
  EXPECT_LT(waited_ms, 2.0 * kShortTimeoutMs + 2000) << "the bounded wait overran";
  // The communicator says it is unusable rather than trying again.
  try {
    problem.call(group->comm(0), options, streams[0]);
    ADD_FAILURE() << "an aborted communicator took another call";
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("unusable")) << e.what();
  }
  reinterpret_cast<volatile std::uint32_t*>(gate.host())[0] = 1;
  streams.drain("release the gate");
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("agreement timeout"));
  group.reset();
  std::printf("TEARDOWN-DONE\n");
}

TEST(NcclFailure, AgreementThatCannotCompleteTimesOutAndAborts) {
  ASYNCTP_REQUIRE_GPUS(1, false);
  const Seed seed;
  const std::string log = ::testing::TempDir() + "nccl_agreement_gate.log";
  const ChildOutcome child =
      run_child("NcclFailureChild.AgreementGate",
                std::string(kGateChildVariable) + "=" + std::to_string(seed.value), log, 60.0);
  EXPECT_NE(std::string::npos,
            child.output.find("AGREEMENT-TIMEOUT code=" +
                              std::to_string(static_cast<int>(ErrorCode::timeout))))
      << "the call did not end in a timeout:\n"
      << child.output;
  EXPECT_TRUE(child.finished) << "the child hung after the abort (killed after 60 s):\n"
                              << child.output;
  EXPECT_NE(std::string::npos, child.output.find("TEARDOWN-DONE"))
      << "releasing the queued work or destroying the aborted group failed:\n"
      << child.output;
  EXPECT_TRUE(child.passed) << child.output;
}

class NcclFailureMulti : public ::testing::TestWithParam<int> {};

TEST_P(NcclFailureMulti, ARankThatNeverCallsEndsInATimeoutNotAHang) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, false);
  lb::CleanPlannerEnv env;
  const Seed seed;
  auto rng = seed.rng();
  auto group = std::make_unique<nccl::LocalGroup>(world);
  lb::RankStreams streams;
  CUDA_ASSERT(streams.create(world, nt::first_devices(world)));
  lb::LoopbackProblem problem(lb::loopback_shape(world, 256, 256, 256), rng);
  problem.set_devices(nt::first_devices(world));
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(Algorithm::decomposed);
  options.wait_timeout_ms = kShortTimeoutMs;
  const int absent = world - 1;
  const auto results = lb::run_ranks(
      *group, streams,
      [&](Comm& comm, cudaStream_t s) {
        if (comm.rank() == absent) return RunInfo{};
        return problem.call(comm, options, s);
      },
      "a rank that never calls");
  for (int r = 0; r < absent; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    EXPECT_FALSE(result.call_ok) << "rank " << r << " went ahead without rank " << absent;
    EXPECT_EQ(std::optional<ErrorCode>(ErrorCode::timeout), result.code)
        << "rank " << r << ": " << result.message;
    EXPECT_NE(std::string::npos, result.message.find("agreement"))
        << "rank " << r << ": " << result.message;
    EXPECT_LT(result.call_ms, 2.0 * kShortTimeoutMs + 2000) << "rank " << r;
  }
  destroy_bounded(std::move(group), 60.0);
}

INSTANTIATE_TEST_SUITE_P(W, NcclFailureMulti, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param);
                         });

class NcclGrowth : public ::testing::TestWithParam<int> {};

TEST_P(NcclGrowth, WorkspaceGrowsBetweenCallsOnANonBlockingStream) {
  const int world = GetParam();
  ASYNCTP_REQUIRE_GPUS(world, true);
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  nccl::LocalGroup group(world);
  // Each shape needs a larger gathered A than the last, so the workspace
  // grows (and its barrier generation restarts) before each call.
  for (const std::int64_t m : {256, 1024, 4096}) {
    ASSERT_NO_FATAL_FAILURE(nt::expect_correct_call(group, lb::loopback_shape(world, m, 256, 512),
                                                    Algorithm::native, rng,
                                                    "grown to m " + std::to_string(m)));
  }
}

INSTANTIATE_TEST_SUITE_P(W, NcclGrowth, ::testing::Values(1, 2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param);
                         });

}  // namespace
}  // namespace asynctp
