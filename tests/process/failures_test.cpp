// The CPU process transport when things go wrong: a rank's bad argument and
// ranks that disagree fail every rank with nothing written (and the group
// stays usable); a rank whose process is killed mid-call makes the others
// fail soon, naming it, with nothing left in /dev/shm; ranks that never come
// to the group's creation, and arguments that cannot make one, are errors
// that name what was wrong.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/problem.hpp"
#include "core/reference.hpp"
#include "cpu/process_id.hpp"
#include "cpu/shm_control.hpp"
#include "cpu/shm_segment.hpp"
#include "process/process_ranks.hpp"
#include "support/expect_error.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp_test {
namespace {

using namespace asynctp;

bool untouched(const TensorView& view) {
  return core::compare_to_reference(
             view, std::vector<double>(static_cast<std::size_t>(view.numel()), 0.0))
             .unwritten == view.numel();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ProcessFailures, BadArgumentOnOneRankFailsEveryRankWithNothingWritten) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();
  const auto reports = run_process_ranks(3, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;
    const int r = comm.rank();
    FusedProblem problem(make_shape(3, 16, 24, 32, DType::fp32), rng);
    HostTensor wrong_b(DType::fp32, 33, 24);  // k + 1 rows
    wrong_b.fill_normal(rng);
    problem.poison_outputs();
    const TensorView g = problem.g(r);
    const Outcome bad = outcome_of([&] {
      return fused_all_gather_matmul(comm, problem.a(r), r == 1 ? wrong_b.view() : problem.b(r),
                                     problem.c(r), &g);
    });
    EXPECT_FALSE(bad.ok);
    if (r == 1) {
      EXPECT_EQ(bad.code, ErrorCode::invalid_argument) << bad.message;
      EXPECT_TRUE(contains(bad.message, "b")) << bad.message;
    } else {
      EXPECT_EQ(bad.code, ErrorCode::mismatch) << bad.message;
      EXPECT_TRUE(contains(bad.message, "rank 1 rejected its arguments")) << bad.message;
    }
    EXPECT_TRUE(untouched(problem.c(r))) << "c_out written by a failed call";
    EXPECT_TRUE(untouched(problem.g(r))) << "a_gathered_out written by a failed call";

    // The group is still in step: a good call works.
    const Outcome good = outcome_of([&] { return problem.call(comm, {}); });
    EXPECT_TRUE(good.ok) << good.message;
    if (good.ok) problem.expect_correct(r);
    return good;
  });
  expect_all_ranks_ok(reports);
}

TEST(ProcessFailures, RanksThatDisagreeAllFailNamingTheDisagreement) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();
  const auto reports = run_process_ranks(2, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;  // the same on every rank
    const int r = comm.rank();
    ReduceScatterProblem agreed(rs_shape(2, 16, 24, 32, DType::fp32), rng);
    // Rank 1 gives a different M: the chunks the ranks ship would not match.
    std::mt19937_64 own_rng = first_rng;
    ReduceScatterProblem mine(rs_shape(2, r == 0 ? 16 : 8, 24, 32, DType::fp32), own_rng);
    mine.poison_outputs();
    const Outcome bad = outcome_of([&] { return mine.call(comm, {}); });
    EXPECT_FALSE(bad.ok);
    EXPECT_EQ(bad.code, ErrorCode::mismatch) << bad.message;
    EXPECT_TRUE(contains(bad.message, "ranks disagree on a rows (M)")) << bad.message;
    EXPECT_TRUE(untouched(mine.out(r)));

    agreed.poison_outputs();
    const Outcome good = outcome_of([&] { return agreed.call(comm, {}); });
    EXPECT_TRUE(good.ok) << good.message;
    if (good.ok) agreed.expect_correct(r);
    return good;
  });
  expect_all_ranks_ok(reports);
}

// The victim kills itself at a known point of the call (a hook) where the
// survivors still need it: before its producer is done (all-gather: the
// completion barrier waits for it; reduce-scatter: its partials never
// come). The survivors must fail naming it well before their wait timeout.
// (Killed later, after its last part in the call, a rank's peers rightly
// finish the call.)
struct Kill {
  const char* name;
  core::OpKind op;
  Algorithm algorithm;
  int world;
  int victim;
  bool in_compute;  // before_compute, else before_copy
};

class ProcessKilledRank : public ::testing::TestWithParam<Kill> {};

TEST_P(ProcessKilledRank, PeersFailNamingItWithinTheTimeoutAndNothingStays) {
  const Kill kill = GetParam();
  constexpr std::int64_t kTimeoutMs = 20'000;
  const cpu::UniqueId id = cpu::make_unique_id();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();
  const auto reports = run_process_ranks(kill.world, id, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;
    Options options;
    options.algorithm = kill.algorithm;
    options.wait_timeout_ms = kTimeoutMs;
    const auto die = [victim = kill.victim](int rank, int) {
      if (rank == victim) ::raise(SIGKILL);
    };
    (kill.in_compute ? options.hooks.before_compute : options.hooks.before_copy) = die;
    if (kill.op == core::OpKind::all_gather_matmul) {
      FusedProblem problem(make_shape(kill.world, 32, 32, 32, DType::fp32), rng);
      return outcome_of([&] { return problem.call(comm, options); });
    }
    ReduceScatterProblem problem(rs_shape(kill.world, 32, 32, 32, DType::fp32), rng);
    return outcome_of([&] { return problem.call(comm, options); });
  });
  const std::string victim = "rank " + std::to_string(kill.victim);
  for (const auto& report : reports) {
    SCOPED_TRACE("rank " + std::to_string(report.rank));
    if (report.rank == kill.victim) {
      EXPECT_EQ(report.signal, SIGKILL);
      continue;
    }
    EXPECT_TRUE(report.exited && report.exit_code == 0) << report.exit_code;
    ASSERT_TRUE(report.reported);
    EXPECT_FALSE(report.outcome.ok);
    EXPECT_TRUE(contains(report.outcome.message, victim)) << report.outcome.message;
    EXPECT_TRUE(contains(report.outcome.message, "is gone")) << report.outcome.message;
    EXPECT_LT(report.seconds * 1000, kTimeoutMs / 2) << report.outcome.message;
  }
  EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(
    Points, ProcessKilledRank,
    ::testing::Values(Kill{"AllGatherCopy", core::OpKind::all_gather_matmul, Algorithm::pipelined,
                           3, 2, false},
                      Kill{"AllGatherOwnChunk", core::OpKind::all_gather_matmul,
                           Algorithm::decomposed, 2, 0, false},
                      Kill{"ReduceScatterShip", core::OpKind::matmul_reduce_scatter,
                           Algorithm::pipelined, 3, 1, false},
                      Kill{"ReduceScatterCompute", core::OpKind::matmul_reduce_scatter,
                           Algorithm::decomposed, 4, 3, true}),
    [](const ::testing::TestParamInfo<Kill>& info) { return std::string(info.param.name); });

// A rank whose process ends between calls (here it just exits, as a crash
// outside asynctp would end it): the others' next call fails at the
// agreement, naming it, instead of waiting out the timeout; later calls fail
// at once with the same reason.
TEST(ProcessFailures, ARankGoneBetweenCallsFailsTheNextCallNamingIt) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  const std::mt19937_64 first_rng = seed.rng();
  constexpr std::int64_t kTimeoutMs = 20'000;
  const cpu::UniqueId id = cpu::make_unique_id();
  const auto reports = run_process_ranks(3, id, [&](Comm& comm) {
    std::mt19937_64 rng = first_rng;
    Options options;
    options.wait_timeout_ms = kTimeoutMs;
    FusedProblem problem(make_shape(3, 16, 24, 32, DType::fp32), rng);
    const Outcome first = outcome_of([&] { return problem.call(comm, options); });
    EXPECT_TRUE(first.ok) << first.message;
    if (comm.rank() == 1) ::_exit(0);
    const Outcome second = outcome_of([&] { return problem.call(comm, options); });
    EXPECT_FALSE(second.ok);
    EXPECT_TRUE(contains(second.message, "rank 1 (pid")) << second.message;
    EXPECT_TRUE(contains(second.message, "is gone")) << second.message;
    const Outcome third = outcome_of([&] { return problem.call(comm, options); });
    EXPECT_FALSE(third.ok);
    EXPECT_TRUE(contains(third.message, "group is broken")) << third.message;
    EXPECT_TRUE(contains(third.message, "rank 1 (pid")) << third.message;
    return second;
  });
  for (const auto& report : reports) {
    SCOPED_TRACE("rank " + std::to_string(report.rank));
    EXPECT_TRUE(report.exited && report.exit_code == 0) << report.exit_code;
    EXPECT_LT(report.seconds * 1000, kTimeoutMs / 2);
  }
  EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
}

// A peer that dies right after it joined, while the others still check
// the group at creation: its pid no longer runs, but it was in this
// process's pid namespace, so it is dead, not out of sight (which would
// leave the next call to its timeout). Here rank 1 is played by a process
// that joins under the pid of a child already reaped.
TEST(ProcessFailures, APeerDeadRightAfterJoiningIsNamedByTheNextCall) {
  std::fflush(stdout);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);

  const cpu::UniqueId id = cpu::make_unique_id();
  const cpu::SegmentNames names = cpu::segment_names(id);
  const pid_t joiner = ::fork();
  if (joiner == 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto segment = cpu::ShmSegment::open(names.control(), cpu::shm::control_bytes(2))) {
        const auto* header = static_cast<const cpu::shm::Header*>(segment->data());
        if (header->magic.load(std::memory_order_acquire) == cpu::shm::kControlMagic) {
          cpu::shm::Control control(segment->data(), 2);
          struct stat ns {};
          if (::stat("/proc/self/ns/pid", &ns) != 0) ::_exit(2);
          control.ranks[1].pid_namespace_dev = static_cast<std::uint64_t>(ns.st_dev);
          control.ranks[1].pid_namespace_ino = static_cast<std::uint64_t>(ns.st_ino);
          control.ranks[1].pid.store(static_cast<std::int32_t>(dead), std::memory_order_release);
          ::_exit(0);
        }
      }
      ::usleep(1000);
    }
    ::_exit(1);
  }
  ASSERT_GT(joiner, 0);
  constexpr std::int64_t kTimeoutMs = 10'000;
  const auto begin = std::chrono::steady_clock::now();
  const Outcome out = outcome_of([&] {
    const std::unique_ptr<Comm> comm = cpu::make_process_comm(id, 2, 0, {1, kTimeoutMs});
    std::mt19937_64 rng(7);
    FusedProblem problem(make_shape(2, 16, 24, 32, DType::fp32), rng);
    Options options;
    options.wait_timeout_ms = kTimeoutMs;
    return problem.call(*comm, options);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(out.code, ErrorCode::backend) << out.message;
  EXPECT_TRUE(contains(out.message, "rank 1 (pid " + std::to_string(dead) + ") is gone"))
      << out.message;
  EXPECT_LT(seconds * 1000, kTimeoutMs / 2) << out.message;
  int status = 0;
  ASSERT_EQ(::waitpid(joiner, &status, 0), joiner);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the joiner did not join";
  EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
}

TEST(ProcessSetup, RanksThatNeverComeAreATimeoutNamingThemAndLeaveNothing) {
  cpu::ProcessOptions options;
  options.setup_timeout_ms = 300;
  struct Alone {
    int world, rank;
    const char* waited_for;
  };
  for (const Alone& alone : {Alone{3, 0, "rank(s) 1, 2 to join"},  // rank 0 made the segments
                             Alone{2, 1, "for rank 0 to make"}}) {
    const cpu::UniqueId id = cpu::make_unique_id();
    const Outcome out = outcome_of([&] {
      (void)cpu::make_process_comm(id, alone.world, alone.rank, options);
      return RunInfo{};
    });
    EXPECT_EQ(out.code, ErrorCode::timeout) << out.message;
    EXPECT_TRUE(contains(out.message, alone.waited_for)) << out.message;
    EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
  }
}

TEST(ProcessSetup, ArgumentsThatCannotMakeAGroupAreNamed) {
  const cpu::UniqueId id = cpu::make_unique_id();
  cpu::UniqueId garbage{};
  std::snprintf(garbage.bytes, sizeof garbage.bytes, "not an id");
  expect_invalid_argument([&] { (void)cpu::make_process_comm(garbage, 2, 0); }, "id",
                          "not an id made by asynctp::cpu::make_unique_id");
  expect_invalid_argument([&] { (void)cpu::make_process_comm(id, 0, 0); }, "world_size",
                          "must lie in [1, 1024], got 0");
  expect_invalid_argument([&] { (void)cpu::make_process_comm(id, 2, 2); }, "rank",
                          "must lie in [0, 2), got 2");
  expect_invalid_argument([&] { (void)cpu::make_process_comm(id, 2, -1); }, "rank",
                          "must lie in [0, 2), got -1");
  expect_invalid_argument(
      [&] {
        (void)cpu::make_process_comm(id, 2, 0, {0, 0});
      },
      "options.setup_timeout_ms", "must be positive, got 0");
  expect_invalid_argument(
      [&] {
        (void)cpu::make_process_comm(id, 2, 0, {-1, 1000});
      },
      "options.gemm_workers", "must lie in [0, 256]");
  EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
}

// Rank 0 made a group of 2; a process that says 3 is told so, and both fail.
TEST(ProcessSetup, AWorldSizeOtherThanRankZerosIsNamed) {
  const cpu::UniqueId id = cpu::make_unique_id();
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      (void)cpu::make_process_comm(id, 2, 0, {0, 500});
    } catch (const Error&) {
      ::_exit(0);
    }
    ::_exit(1);
  }
  ASSERT_GT(child, 0);
  const Outcome out = outcome_of([&] {
    (void)cpu::make_process_comm(id, 3, 1, {0, 2'000});
    return RunInfo{};
  });
  EXPECT_EQ(out.code, ErrorCode::invalid_argument) << out.message;
  EXPECT_TRUE(contains(out.message, "world_size: rank 0 made this group for 2 ranks"))
      << out.message;
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank 0 did not fail cleanly";
  EXPECT_EQ(leftover_segments(id), std::vector<std::string>{});
}

}  // namespace
}  // namespace asynctp_test
