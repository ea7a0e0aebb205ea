// No shared-memory name outlives a group, however its processes end: ranks
// killed after the join (mid-call, or gone without destroying their
// communicator) leave nothing, since the names went at the join; a rank that
// survives a failed setup unlinks them; and what a group whose every process
// was killed before its names went left behind is removed by rank 0 of the
// next group made on the host (cpu/shm_sweep.hpp), never while one of its
// processes lives, holds the memory, or was in another pid namespace.
//
// The ranks here are forked children that the test kills and reaps itself:
// until it reaps them they are zombies, whose pids still exist, so no sweep
// (of this test or of another running at the same time) can remove what
// they left before the test has looked at it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "cpu/process_group.hpp"
#include "cpu/process_id.hpp"
#include "cpu/shm_control.hpp"
#include "cpu/shm_segment.hpp"
#include "cpu/shm_sweep.hpp"
#include "process/process_ranks.hpp"
#include "support/fused_problem.hpp"

namespace asynctp_test {
namespace {

using namespace asynctp;
using Names = std::vector<std::string>;

constexpr std::int64_t kSetupTimeoutMs = 10'000;

// A rank of group `id` in a child, which then runs `then`; exit status 0
// when all went well, 3 when the communicator could not be made.
pid_t fork_rank(const cpu::UniqueId& id, int world, int rank,
                const std::function<void(Comm&)>& then = {},
                std::int64_t setup_timeout_ms = kSetupTimeoutMs) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  try {
    const std::unique_ptr<Comm> comm = cpu::make_process_comm(id, world, rank, {1, setup_timeout_ms});
    if (then) then(*comm);
  } catch (const Error&) {
    ::_exit(3);
  }
  ::_exit(0);
}

// A child that runs `body` then exits 0.
pid_t fork_doing(const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  return pid;
}

// The exit status of `pid` (reaping it), or 128 + the signal that ended it.
int reap(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits (bounded) until `ready` holds.
bool wait_until(const std::function<bool()>& ready, double seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Whether rank `rank` of group `id` (of `world` ranks) has joined: its pid
// is in the control segment (mapped only while this looks).
bool joined(const cpu::UniqueId& id, int world, int rank) {
  const auto control =
      cpu::ShmSegment::open(cpu::segment_names(id).control(), cpu::shm::control_bytes(world));
  if (!control) return false;
  const cpu::shm::Control view(control->data(), world);
  return view.header->magic.load() == cpu::shm::kControlMagic &&
         view.ranks[rank].pid.load() != 0;
}

Names setup_names(const cpu::UniqueId& id) {
  const std::string token = cpu::segment_names(id).token;
  return {"asynctp." + token + ".ctl", "asynctp." + token + ".d0"};
}

Names sorted(Names names) {
  std::sort(names.begin(), names.end());
  return names;
}

// What a new group does first: rank 0 of a group of one is made and dropped.
void make_a_new_group() {
  (void)cpu::make_process_comm(cpu::make_unique_id(), 1, 0, {1, kSetupTimeoutMs});
}

// Group `id`'s names `left`, by ranks killed and not reaped yet (zombies),
// stay while any of those pids exists, whatever groups are made meanwhile;
// once the last is reaped, the next group made removes them.
void expect_swept_once_all_reaped(const cpu::UniqueId& id, const Names& left,
                                  const std::vector<pid_t>& killed) {
  for (pid_t pid : killed) {
    make_a_new_group();
    EXPECT_EQ(sorted(leftover_segments(id)), sorted(left)) << "swept while pid " << pid << " exists";
    EXPECT_EQ(reap(pid), 128 + SIGKILL);
  }
  make_a_new_group();
  EXPECT_EQ(leftover_segments(id), Names{});
}

// A pid that no process has now (a child already reaped).
pid_t dead_pid() {
  const pid_t pid = fork_doing([] {});
  reap(pid);
  return pid;
}

cpu::shm::Member member(pid_t pid, const cpu::shm::Member& namespace_of) {
  cpu::shm::Member m = namespace_of;
  m.pid = pid;
  return m;
}

TEST(ProcessLeftovers, CreatorKilledBeforeAnyPeerJoinedIsSweptByTheNextGroup) {
  const cpu::UniqueId id = cpu::make_unique_id();
  const pid_t rank0 = fork_rank(id, 2, 0);
  ASSERT_TRUE(wait_until([&] { return joined(id, 2, 0); })) << "rank 0 never made the group";
  ::kill(rank0, SIGKILL);
  expect_swept_once_all_reaped(id, setup_names(id), {rank0});
}

TEST(ProcessLeftovers, EveryRankKilledDuringTheSetupIsSweptByTheNextGroup) {
  const cpu::UniqueId id = cpu::make_unique_id();
  // Ranks 0 and 1 of 3 join; rank 2 never comes; both are killed waiting.
  const pid_t rank0 = fork_rank(id, 3, 0);
  const pid_t rank1 = fork_rank(id, 3, 1);
  ASSERT_TRUE(wait_until([&] { return joined(id, 3, 1); })) << "rank 1 never joined";
  ::kill(rank0, SIGKILL);
  ::kill(rank1, SIGKILL);
  expect_swept_once_all_reaped(id, setup_names(id), {rank0, rank1});
}

// A peer killed after it opened the group's segments, before it published
// its pid: rank 0 survives, times out, and unlinks every name itself.
TEST(ProcessLeftovers, APeerKilledWhileJoiningLeavesTheSurvivorToUnlink) {
  const cpu::UniqueId id = cpu::make_unique_id();
  const cpu::SegmentNames names = cpu::segment_names(id);
  const pid_t rank0 = fork_rank(id, 2, 0, {}, 1'000);
  const pid_t peer = fork_doing([&] {
    // What a joining rank does first: map both segments.
    std::optional<cpu::ShmSegment> control, data;
    const bool opened = wait_until([&] {
      control = cpu::ShmSegment::open(names.control(), cpu::shm::control_bytes(2));
      data = cpu::ShmSegment::open(names.data(0), 1);
      return control && data;
    });
    if (opened) ::raise(SIGKILL);
  });
  EXPECT_EQ(reap(peer), 128 + SIGKILL);
  EXPECT_EQ(reap(rank0), 3) << "rank 0 should have failed its setup (timeout)";
  EXPECT_EQ(leftover_segments(id), Names{});
}

// After the join the names are gone: ranks killed in a call, or ending
// without destroying their communicator, leave nothing, even before any
// sweep could look (they are still zombies when the test looks).
TEST(ProcessLeftovers, RanksKilledMidCallOrEndingWithoutDestroyingTheirCommLeaveNothing) {
  constexpr int kWorld = 3;
  for (const bool killed : {true, false}) {
    SCOPED_TRACE(killed ? "killed mid-call" : "ended without destroying the communicator");
    const cpu::UniqueId id = cpu::make_unique_id();
    std::vector<pid_t> ranks;
    for (int r = 0; r < kWorld; ++r) {
      ranks.push_back(fork_rank(id, kWorld, r, [killed](Comm& comm) {
        std::mt19937_64 rng(11);
        FusedProblem problem(make_shape(kWorld, 16, 24, 32, DType::fp32), rng);
        Options options;
        if (killed) options.hooks.before_compute = [](int, int) { ::raise(SIGKILL); };
        (void)problem.call(comm, options);
        ::_exit(0);  // the communicator is never destroyed
      }));
    }
    for (pid_t pid : ranks) {
      ASSERT_TRUE(wait_until([&] {
        siginfo_t info{};
        return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0;
      }));
    }
    EXPECT_EQ(leftover_segments(id), Names{});
    for (pid_t pid : ranks) EXPECT_EQ(reap(pid), killed ? 128 + SIGKILL : 0);
  }
}

// Every rank killed while a grown workspace's name exists (rank 0 made it,
// the others had not mapped it yet): the segment records every member, as
// rank 0 makes it, and the next group removes it once they are all gone.
TEST(ProcessLeftovers, EveryRankKilledDuringAGrowthIsSweptByTheNextGroup) {
  const cpu::UniqueId id = cpu::make_unique_id();
  const cpu::SegmentNames names = cpu::segment_names(id);
  const pid_t rank1 = fork_doing([] { ::pause(); });
  const pid_t rank0 = fork_doing([&] {
    const cpu::shm::Member me = cpu::this_process_member();
    (void)cpu::make_data_segment(names, 2, 1, 4096, {me, member(rank1, me)});
    ::pause();
  });
  const Names grown{"asynctp." + names.token + ".d1"};
  ASSERT_TRUE(wait_until([&] { return leftover_segments(id) == grown; }));
  make_a_new_group();
  EXPECT_EQ(leftover_segments(id), grown) << "swept while its members run";
  ::kill(rank0, SIGKILL);
  ::kill(rank1, SIGKILL);
  expect_swept_once_all_reaped(id, grown, {rank0, rank1});
}

// A group mid-setup (rank 0 waiting for rank 1) while another is made:
// nothing of it is swept, and it then completes and works.
TEST(ProcessLeftovers, ALiveGroupMidSetupIsNeverSwept) {
  const cpu::UniqueId id = cpu::make_unique_id();
  const auto one_call = [](Comm& comm) {
    std::mt19937_64 rng(5);
    FusedProblem problem(make_shape(2, 16, 24, 32, DType::fp32), rng);
    problem.poison_outputs();
    (void)problem.call(comm, {});
    problem.expect_correct(comm.rank());
    if (::testing::Test::HasFailure()) ::_exit(1);
  };
  const pid_t rank0 = fork_rank(id, 2, 0, one_call);
  ASSERT_TRUE(wait_until([&] { return joined(id, 2, 0); }));
  make_a_new_group();
  (void)cpu::sweep_stale_segments(0);
  EXPECT_EQ(sorted(leftover_segments(id)), sorted(setup_names(id)));
  const pid_t rank1 = fork_rank(id, 2, 1, one_call);
  EXPECT_EQ(reap(rank0), 0);
  EXPECT_EQ(reap(rank1), 0);
  EXPECT_EQ(leftover_segments(id), Names{});
}

// Control segments the test writes by hand, their members dead: one that
// records another pid namespace, and one that records none (the layout
// before namespaces were recorded) while a process still maps it, stay;
// the latter goes once nothing holds it.
TEST(ProcessLeftovers, NamesOfAnotherNamespaceOrStillHeldAreNeverSwept) {
  const cpu::shm::Member me = cpu::this_process_member();
  ASSERT_NE(me.pid_namespace_ino, 0u) << "no /proc/self/ns/pid here";
  const pid_t dead = dead_pid();
  const auto make_control = [&](const cpu::UniqueId& id, const cpu::shm::Member& rank0) {
    return cpu::ShmSegment::create(
        cpu::segment_names(id).control(), cpu::shm::control_bytes(2), [&](void* base) {
          const cpu::shm::Control control = cpu::shm::construct_control(base, 2);
          control.ranks[0].pid_namespace_dev = rank0.pid_namespace_dev;
          control.ranks[0].pid_namespace_ino = rank0.pid_namespace_ino;
          control.ranks[0].pid.store(rank0.pid);
          control.header->magic.store(cpu::shm::kControlMagic);
        });
  };
  cpu::shm::Member elsewhere = member(dead, me);
  elsewhere.pid_namespace_ino += 1;
  const cpu::UniqueId foreign = cpu::make_unique_id();
  (void)make_control(foreign, elsewhere);
  const cpu::UniqueId unrecorded = cpu::make_unique_id();
  std::optional<cpu::ShmSegment> held = make_control(unrecorded, member(dead, {}));

  make_a_new_group();
  EXPECT_EQ(leftover_segments(foreign).size(), 1u) << "a group of another namespace was swept";
  EXPECT_EQ(leftover_segments(unrecorded).size(), 1u) << "a segment still mapped was swept";
  held.reset();
  make_a_new_group();
  EXPECT_EQ(leftover_segments(unrecorded), Names{});
  EXPECT_EQ(leftover_segments(foreign).size(), 1u);
  cpu::ShmSegment::unlink(cpu::segment_names(foreign).control());
  EXPECT_EQ(leftover_segments(foreign), Names{});
}

// A dead group's names owned by another user are not this process's to
// remove.
TEST(ProcessLeftovers, NamesOfAnotherUserAreNeverSwept) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const cpu::UniqueId id = cpu::make_unique_id();
  const cpu::SegmentNames names = cpu::segment_names(id);
  const pid_t dead = dead_pid();
  (void)cpu::make_data_segment(names, 1, 0, 4096, {member(dead, cpu::this_process_member())});
  const std::string path = std::string(cpu::ShmSegment::kDirectory) + names.data(0);
  ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
  make_a_new_group();
  EXPECT_EQ(leftover_segments(id).size(), 1u) << "another user's segment was swept";
  ASSERT_EQ(::chown(path.c_str(), ::geteuid(), ::getegid()), 0);
  make_a_new_group();
  EXPECT_EQ(leftover_segments(id), Names{});
}

}  // namespace
}  // namespace asynctp_test
