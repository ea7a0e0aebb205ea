// Group: one thread per rank for run(), every rank joined before run()
// returns, and the lowest failing rank's exception rethrown unchanged.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

TEST(Group, RunGivesEveryRankItsOwnComm) {
  cpu::Group group({4, 2});
  EXPECT_EQ(group.world_size(), 4);
  EXPECT_EQ(group.gemm_workers_per_rank(), 2);
  std::vector<const Comm*> seen(4, nullptr);
  std::vector<std::thread::id> threads(4);
  asynctp_test::run_bounded(group, [&](Comm& comm) {
    seen[static_cast<std::size_t>(comm.rank())] = &comm;
    threads[static_cast<std::size_t>(comm.rank())] = std::this_thread::get_id();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(seen[static_cast<std::size_t>(r)], &group.comm(r));
    EXPECT_EQ(group.comm(r).rank(), r);
    EXPECT_EQ(group.comm(r).world_size(), 4);
    EXPECT_EQ(group.comm(r).device_kind(), DeviceKind::cpu);
    EXPECT_STREQ(group.comm(r).backend_name(), "cpu");
    for (int q = 0; q < r; ++q) {
      EXPECT_NE(threads[static_cast<std::size_t>(r)], threads[static_cast<std::size_t>(q)])
          << "ranks " << q << " and " << r << " shared a thread";
    }
  }
}

// The hook a GPU group makes its device current with: called on the rank's
// own thread, once, and returned from before the body runs there.
class HookedGroup final : public RankGroup {
 public:
  explicit HookedGroup(int world) : entered(static_cast<std::size_t>(world)), inner_({world, 2}) {}
  int world_size() const noexcept override { return inner_.world_size(); }
  Comm& comm(int rank) override { return inner_.comm(rank); }
  std::vector<std::thread::id> entered;
  std::atomic<int> entries{0};

 private:
  void enter_rank_thread(int rank) override {
    entered[static_cast<std::size_t>(rank)] = std::this_thread::get_id();
    ++entries;
  }
  cpu::Group inner_;
};

TEST(Group, RankGroupRunsEachRanksEntryHookOnItsThreadBeforeTheBody) {
  HookedGroup group(3);
  RankGroup& generic = group;
  std::vector<std::thread::id> bodies(3);
  std::atomic<int> hooked_before_body{0};
  generic.run([&](Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    bodies[r] = std::this_thread::get_id();
    if (group.entered[r] == bodies[r]) ++hooked_before_body;
  });
  EXPECT_EQ(3, group.entries.load());
  EXPECT_EQ(3, hooked_before_body.load());
  EXPECT_THROW(generic.comm(3), Error);
}

TEST(Group, EveryInProcessGroupIsARankGroup) {
  cpu::Group group({2, 2});
  RankGroup& generic = group;
  EXPECT_EQ(2, generic.world_size());
  std::atomic<int> ranks{0};
  generic.run([&](Comm& comm) { ranks += comm.rank() + 1; });
  EXPECT_EQ(3, ranks.load());
}

// The default timing rule (RankGroup::time_calls): one figure per iteration,
// the slowest rank's wall time (neither the mean nor rank 0's would reach
// 30 ms here), and `before` on rank 0 only, given rank 0's previous time.
TEST(Group, TimeCallsReportsTheSlowestRankPerIteration) {
  cpu::Group group({3, 2});
  RankGroup& generic = group;
  constexpr int kIterations = 4;
  std::atomic<int> calls{0};
  std::vector<int> before_iterations;
  std::vector<std::optional<double>> before_last;
  const std::vector<double> ms = generic.time_calls(
      kIterations,
      [&](Comm& comm, int iteration) {
        ++calls;
        // Rank 2 is slow in odd iterations, rank 1 in even ones.
        const bool slow = comm.rank() == (iteration % 2 == 1 ? 2 : 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 30 : 1));
      },
      [&](int iteration, std::optional<double> last_ms) {
        before_iterations.push_back(iteration);
        before_last.push_back(last_ms);
      });
  ASSERT_EQ(ms.size(), static_cast<std::size_t>(kIterations));
  EXPECT_EQ(calls.load(), 3 * kIterations);
  for (double each : ms) EXPECT_GE(each, 30.0);
  EXPECT_EQ(before_iterations, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(before_last[0].has_value());
  for (std::size_t i = 1; i < before_last.size(); ++i) {
    ASSERT_TRUE(before_last[i].has_value());
    EXPECT_GE(*before_last[i], 1.0);
  }
}

TEST(Group, TimeCallsRethrowsARanksFailure) {
  cpu::Group group({2, 2});
  EXPECT_THROW(group.time_calls(3,
                                [](Comm& comm, int iteration) {
                                  if (comm.rank() == 1 && iteration == 1) {
                                    throw std::runtime_error("rank 1 failed");
                                  }
                                }),
               std::runtime_error);
}

TEST(Group, AutomaticWorkerCountIsAtLeastTwo) {
  asynctp_test::ScopedEnv env("ASYNCTP_CPU_WORKERS", std::nullopt);
  cpu::Group group({8, 0});
  EXPECT_GE(group.gemm_workers_per_rank(), 2);  // pipelined needs its two lanes
  asynctp_test::ScopedEnv three("ASYNCTP_CPU_WORKERS", "3");
  cpu::Group from_env({2, 0});
  EXPECT_EQ(from_env.gemm_workers_per_rank(), 3);
}

TEST(Group, RunRethrowsTheLowestFailingRanksExceptionAfterAllJoined) {
  cpu::Group group({4, 2});
  std::atomic<int> finished{0};
  try {
    group.run([&](Comm& comm) {
      // Rank 3 fails first; rank 1 fails later; rank 0 and 2 finish last.
      const int r = comm.rank();
      if (r == 3) {
        ++finished;
        throw std::runtime_error("failure of rank 3");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(r == 1 ? 20 : 60));
      ++finished;
      if (r == 1) throw Error(ErrorCode::backend, "failure of rank 1");
    });
    ADD_FAILURE() << "run() returned normally";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::backend);  // type and code preserved
    EXPECT_NE(std::string(e.what()).find("failure of rank 1"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception: " << e.what();
  }
  EXPECT_EQ(finished.load(), 4) << "run() returned before every rank finished";
}

TEST(Group, RunRethrowsTheLowestRankAmongCollectiveFailures) {
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::Shape shape;
  shape.world = 4;
  shape.m = 16;
  asynctp_test::FusedProblem problem(shape, rng);
  cpu::Group group({4, 2});
  Options options;
  options.algorithm = Algorithm::decomposed;
  options.wait_timeout_ms = 100;
  // Ranks 3 and 2 each lose a chunk; ranks 0 and 1 succeed.
  options.hooks.drop = [](int rank, int chunk) { return rank >= 2 && chunk == 0; };
  try {
    asynctp_test::run_bounded(group, [&](Comm& comm) { problem.call(comm, options); });
    ADD_FAILURE() << "run() returned normally";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::timeout);
    EXPECT_NE(std::string(e.what()).find("rank 2: chunk 0"), std::string::npos) << e.what();
  }
}

TEST(Group, RunWithoutFailuresReturnsNormally) {
  cpu::Group group({3, 2});
  std::atomic<int> ran{0};
  EXPECT_NO_THROW(group.run([&](Comm&) { ++ran; }));
  EXPECT_EQ(ran.load(), 3);
  // And again: run() may be called any number of times.
  EXPECT_NO_THROW(group.run([&](Comm&) { ++ran; }));
  EXPECT_EQ(ran.load(), 6);
}

}  // namespace
}  // namespace asynctp
