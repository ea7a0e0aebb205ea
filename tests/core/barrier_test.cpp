// The bounded barrier the ranks of an in-process group meet at. It must
// release everyone when all arrive (again and again, generation after
// generation), and when one rank never comes: time out, name the missing
// rank(s), and break, so that the ranks still waiting and every later
// arrival fail at once with the original reason instead of waiting out
// their own timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "core/bounded_barrier.hpp"

namespace asynctp::core {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(BoundedBarrier, ReleasesEveryoneForManyGenerations) {
  constexpr int kParties = 4, kRounds = 300;
  BoundedBarrier barrier(kParties);
  std::atomic<int> arrivals{0};
  std::atomic<int> errors{0};
  std::atomic<int> early{0};  // passed a round before all had arrived in it
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kParties; ++rank) {
    threads.emplace_back([&, rank] {
      for (int round = 0; round < kRounds; ++round) {
        ++arrivals;
        try {
          barrier.arrive_and_wait(rank, "round", 10'000);
        } catch (const Error&) {
          ++errors;
          return;
        }
        if (arrivals.load() < (round + 1) * kParties) ++early;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(arrivals.load(), kParties * kRounds);
  EXPECT_EQ(barrier.broken_reason(), "");
}

TEST(BoundedBarrier, SinglePartyNeverWaits) {
  BoundedBarrier barrier(1);
  const auto begin = Clock::now();
  for (int i = 0; i < 100; ++i) barrier.arrive_and_wait(0, "alone", 1);
  EXPECT_LT(seconds_since(begin), 1.0);
}

TEST(BoundedBarrier, TimeoutNamesTheMissingRanksAndBreaksTheBarrier) {
  BoundedBarrier barrier(4);
  // Ranks 0 and 2 arrive; 1 and 3 never do. Rank 0 has the short timeout.
  std::string message0, message2;
  ErrorCode code0 = ErrorCode::backend, code2 = ErrorCode::backend;
  double seconds2 = 0;
  const auto begin = Clock::now();
  std::thread waiter([&] {
    try {
      barrier.arrive_and_wait(2, "completion", 60'000);
    } catch (const Error& e) {
      code2 = e.code();
      message2 = e.what();
    }
    seconds2 = seconds_since(begin);
  });
  try {
    barrier.arrive_and_wait(0, "completion", 100);
    ADD_FAILURE() << "rank 0 passed a barrier two ranks never reached";
  } catch (const Error& e) {
    code0 = e.code();
    message0 = e.what();
  }
  waiter.join();
  EXPECT_GE(seconds_since(begin), 0.09);
  EXPECT_EQ(code0, ErrorCode::timeout);
  for (const char* part : {"rank 0 waited 100 ms", "'completion' barrier", "rank(s) 1, 3",
                           "never arrived", "ASYNCTP_WAIT_TIMEOUT_MS"}) {
    EXPECT_NE(message0.find(part), std::string::npos) << "missing '" << part << "': " << message0;
  }
  // Rank 2, waiting with a 60 s timeout, is released at once by the break.
  EXPECT_EQ(code2, ErrorCode::timeout);
  EXPECT_NE(message2.find("group is broken"), std::string::npos) << message2;
  EXPECT_NE(message2.find("rank(s) 1, 3"), std::string::npos) << message2;
  EXPECT_LT(seconds2, 5.0);
  EXPECT_NE(barrier.broken_reason().find("rank(s) 1, 3"), std::string::npos);

  // Any later arrival fails at once with the original reason.
  const auto later = Clock::now();
  try {
    barrier.arrive_and_wait(1, "arguments", 60'000);
    ADD_FAILURE() << "a broken barrier let rank 1 through";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::timeout);
    EXPECT_NE(std::string(e.what()).find("group is broken: rank 0 waited 100 ms"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(later), 1.0);
}

TEST(BoundedBarrier, HugeTimeoutWaitsForTheLateRank) {
  BoundedBarrier barrier(2);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    barrier.arrive_and_wait(1, "late", 10'000);
  });
  EXPECT_NO_THROW(barrier.arrive_and_wait(0, "late", std::numeric_limits<std::int64_t>::max()));
  late.join();
  EXPECT_EQ(barrier.broken_reason(), "");
}

}  // namespace
}  // namespace asynctp::core
