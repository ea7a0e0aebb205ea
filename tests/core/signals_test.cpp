// The per-chunk epoch protocol: a chunk is ready only when its flag equals
// the current call's epoch (flags left by earlier calls never look ready, so
// no reset is needed), every wait is bounded and abortable, and a release
// publishes the data written before it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/signals.hpp"

namespace asynctp::core {

// Readable failure messages ("timed_out", not "4-byte object <01-00 00-00>");
// outside the anonymous namespace so that gtest finds it by ADL.
inline void PrintTo(ChunkSignals::WaitResult result, std::ostream* out) {
  switch (result) {
    case ChunkSignals::WaitResult::ready: *out << "ready"; return;
    case ChunkSignals::WaitResult::timed_out: *out << "timed_out"; return;
    case ChunkSignals::WaitResult::aborted: *out << "aborted"; return;
  }
  *out << "WaitResult(" << static_cast<int>(result) << ")";
}

namespace {

using Clock = std::chrono::steady_clock;
using WaitResult = ChunkSignals::WaitResult;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Uncaptured calls skip the reset while epochs grow; captured calls always
// reset; from the first epoch that does not grow (the wrap) every call
// resets, captured or not, for good.
TEST(FlagResetRule, OnlyCapturedCallsResetUntilTheEpochsWrap) {
  FlagResetRule rule;
  std::uint32_t e = 0xfffffff0u - 3;
  for (int i = 0; i < 3; ++i) {
    e = next_epoch(e);
    EXPECT_FALSE(rule.reset_before(e, false)) << "epoch " << e;
  }
  e = next_epoch(e);
  EXPECT_TRUE(rule.reset_before(e, true)) << "a captured call";
  e = next_epoch(e);
  EXPECT_FALSE(rule.reset_before(e, false)) << "an eager call after a captured one";
  while (e != 0xffffffffu) {
    e = next_epoch(e);
    EXPECT_FALSE(rule.reset_before(e, false)) << "epoch " << e;
  }
  e = next_epoch(e);
  ASSERT_EQ(1u, e);
  EXPECT_TRUE(rule.reset_before(e, false)) << "the first call after the wrap";
  for (int i = 0; i < 5; ++i) {
    e = next_epoch(e);
    EXPECT_TRUE(rule.reset_before(e, false)) << "epoch " << e << " after the wrap";
  }
}

TEST(Epoch, AdvancesAndSkipsZeroAtWrapAround) {
  EXPECT_EQ(next_epoch(0), 1u);
  EXPECT_EQ(next_epoch(1), 2u);
  EXPECT_EQ(next_epoch(0xfffffffeu), 0xffffffffu);
  EXPECT_EQ(next_epoch(0xffffffffu), 1u);  // 0 is what fresh flags hold
  static_assert(next_epoch(0xffffffffu) == 1, "usable at compile time");
  // Every epoch in a long run differs from its predecessor and from 0.
  std::uint32_t e = 0xfffffff0u;
  for (int i = 0; i < 40; ++i) {
    const std::uint32_t next = next_epoch(e);
    EXPECT_NE(next, 0u);
    EXPECT_NE(next, e);
    e = next;
  }
}

TEST(ChunkSignals, FreshFlagsAreZeroAndNotReady) {
  const ChunkSignals s(5);
  EXPECT_EQ(s.size(), 5);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(s.load(c), 0u);
  EXPECT_EQ(s.wait(2, 1, 20), WaitResult::timed_out);
}

TEST(ChunkSignals, ReadyOnlyForTheReleasedEpoch) {
  ChunkSignals s(4);
  s.release(2, 7);
  EXPECT_EQ(s.load(2), 7u);
  EXPECT_EQ(s.wait(2, 7, 1000), WaitResult::ready);
  // A flag from the previous call (epoch 7) is stale for call 8...
  EXPECT_EQ(s.wait(2, 8, 20), WaitResult::timed_out);
  // ...and a flag is never "at least" an epoch, only equal to it.
  EXPECT_EQ(s.wait(2, 6, 20), WaitResult::timed_out);
  // Other chunks are independent.
  EXPECT_EQ(s.wait(1, 7, 20), WaitResult::timed_out);
  s.release(2, 8);
  EXPECT_EQ(s.wait(2, 8, 1000), WaitResult::ready);
}

TEST(ChunkSignals, ReleaseFromAnotherThreadWakesTheWaiter) {
  ChunkSignals s(2);
  const auto begin = Clock::now();
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s.release(1, 3);
  });
  EXPECT_EQ(s.wait(1, 3, 10'000), WaitResult::ready);
  const double elapsed = seconds_since(begin);
  producer.join();
  EXPECT_GE(elapsed, 0.025);
  EXPECT_LT(elapsed, 1.0);  // woken by the release, not by the 10 s timeout
}

TEST(ChunkSignals, TimesOutAfterRoughlyTheTimeout) {
  const ChunkSignals s(1);
  for (std::int64_t timeout_ms : {1, 50, 120}) {
    const auto begin = Clock::now();
    EXPECT_EQ(s.wait(0, 1, timeout_ms), WaitResult::timed_out);
    const double elapsed = seconds_since(begin);
    EXPECT_GE(elapsed, timeout_ms / 1000.0 * 0.99) << timeout_ms;
    EXPECT_LT(elapsed, timeout_ms / 1000.0 + 1.0) << timeout_ms;
  }
}

// Configuration accepts any positive int64 as a timeout (e.g. INT64_MAX as
// "wait forever"), so a huge timeout must mean a long wait, never a deadline
// that overflows into the past and expires at once.
TEST(ChunkSignals, HugeTimeoutsDoNotExpireEarly) {
  for (std::int64_t timeout_ms : {std::int64_t{9'223'372'036'854}, std::int64_t{1} << 62,
                                  std::numeric_limits<std::int64_t>::max()}) {
    SCOPED_TRACE("timeout_ms " + std::to_string(timeout_ms));
    ChunkSignals s(1);
    std::thread producer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      s.release(0, 1);
    });
    EXPECT_EQ(s.wait(0, 1, timeout_ms), WaitResult::ready);
    producer.join();
  }
}

TEST(ChunkSignals, AbortsPromptly) {
  const ChunkSignals s(1);
  std::atomic<bool> abort{true};
  auto begin = Clock::now();
  EXPECT_EQ(s.wait(0, 1, 10'000, &abort), WaitResult::aborted);
  EXPECT_LT(seconds_since(begin), 0.5);

  abort = false;
  begin = Clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    abort = true;
  });
  EXPECT_EQ(s.wait(0, 1, 10'000, &abort), WaitResult::aborted);
  const double elapsed = seconds_since(begin);
  aborter.join();
  EXPECT_GE(elapsed, 0.025);
  EXPECT_LT(elapsed, 1.0);
}

// A producer writes a buffer then releases; the consumer that sees the epoch
// must see every byte of this round's data. An ack signal in the other
// direction lets the producer reuse the buffer, as calls reuse the workspace.
TEST(ChunkSignals, ReleasePublishesTheDataWrittenBeforeIt) {
  constexpr int kRounds = 400;
  constexpr int kWords = 4096;
  std::vector<std::uint64_t> buffer(kWords, 0);
  ChunkSignals data(1), ack(1);
  std::atomic<int> bad_rounds{0};
  std::thread consumer([&] {
    std::uint32_t epoch = 0;
    for (int round = 0; round < kRounds; ++round) {
      epoch = next_epoch(epoch);
      if (data.wait(0, epoch, 10'000) != WaitResult::ready) {
        ++bad_rounds;
        return;
      }
      for (int i = 0; i < kWords; ++i) {
        if (buffer[static_cast<std::size_t>(i)] != (static_cast<std::uint64_t>(round) << 32 | i)) {
          ++bad_rounds;
          break;
        }
      }
      ack.release(0, epoch);
    }
  });
  std::uint32_t epoch = 0;
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0 && ack.wait(0, epoch, 10'000) != WaitResult::ready) break;
    epoch = next_epoch(epoch);
    for (int i = 0; i < kWords; ++i) {
      buffer[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(round) << 32 | i;
    }
    data.release(0, epoch);
  }
  consumer.join();
  EXPECT_EQ(bad_rounds.load(), 0);
  EXPECT_EQ(data.load(0), static_cast<std::uint32_t>(kRounds));
  EXPECT_EQ(ack.load(0), static_cast<std::uint32_t>(kRounds));
}

TEST(ChunkTimeoutMessage, NamesRankChunkSourceAndValues) {
  const std::string m = chunk_timeout_message(3, 5, 41, 42, 200);
  for (const char* part : {"rank 3", "chunk 5", "A shard of rank 5", "read 41",
                           "expected epoch 42", "200 ms", "ASYNCTP_WAIT_TIMEOUT_MS"}) {
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
  }
}

}  // namespace
}  // namespace asynctp::core
