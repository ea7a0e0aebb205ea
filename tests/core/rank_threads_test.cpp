// run_on_rank_threads: every rank runs on its own thread, all are joined,
// and the lowest failing rank's exception is the one rethrown.
#include "core/rank_threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asynctp::core {
namespace {

TEST(RankThreads, EveryRankRunsOnItsOwnThread) {
  constexpr int kWorld = 6;
  std::vector<std::thread::id> ids(kWorld);
  std::atomic<int> calls{0};
  run_on_rank_threads(kWorld, [&](int rank) {
    ids[static_cast<std::size_t>(rank)] = std::this_thread::get_id();
    ++calls;
  });
  EXPECT_EQ(kWorld, calls.load());
  const std::set<std::thread::id> distinct(ids.begin(), ids.end());
  EXPECT_EQ(static_cast<std::size_t>(kWorld), distinct.size());
  EXPECT_EQ(0u, distinct.count(std::this_thread::get_id()));
}

TEST(RankThreads, RethrowsTheLowestFailingRankAfterAllJoined) {
  std::atomic<int> finished{0};
  try {
    run_on_rank_threads(5, [&](int rank) {
      if (rank == 1) {
        // Fails late, so the order of failures in time is not the order of ranks.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        throw std::runtime_error("rank 1 failed");
      }
      if (rank == 3) throw std::runtime_error("rank 3 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      ++finished;
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string("rank 1 failed"), e.what());
  }
  EXPECT_EQ(3, finished.load()) << "every non-failing rank ran to the end before the rethrow";
}

}  // namespace
}  // namespace asynctp::core
