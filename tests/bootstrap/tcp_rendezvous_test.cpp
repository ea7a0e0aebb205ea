// The TCP rendezvous, with ranks as threads of this process on 127.0.0.1:
// records arrive everywhere in rank order; a missing rank, a missing rank 0,
// a world-size disagreement and a rank claimed twice end every rank's call
// with the same clear error, within the timeout; stray connections are
// ignored.
#include "bootstrap/tcp_rendezvous.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "bootstrap/rendezvous_support.hpp"

namespace asynctp::bootstrap {
namespace {

using namespace test;

TEST(TcpRendezvous, EveryRankGetsEveryRecordInRankOrder) {
  constexpr int kWorld = 5;
  const int port = free_port();
  std::vector<LaunchInfo> infos;
  std::vector<std::string> records;
  for (int r = 0; r < kWorld; ++r) {
    infos.push_back(info_for(r, kWorld, port));
    // Lengths from empty to the limit, bytes that include NUL.
    std::string record = r == 1   ? std::string()
                         : r == 3 ? std::string(kMaxRecordBytes, static_cast<char>('a' + r))
                                  : "rank " + std::to_string(r) + std::string(1, '\0') + "tail";
    records.push_back(record);
  }
  const auto out = run_all(infos, records, 10'000);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_FALSE(out[static_cast<std::size_t>(r)].failed)
        << out[static_cast<std::size_t>(r)].message;
    EXPECT_EQ(records, out[static_cast<std::size_t>(r)].records);
  }
}

TEST(TcpRendezvous, OneRankNeedsNoNetwork) {
  const auto records = all_gather_records(info_for(0, 1, /*port, unused=*/0), "alone", 1);
  EXPECT_EQ(std::vector<std::string>{"alone"}, records);
}

TEST(TcpRendezvous, Rank0AloneNamesTheRanksThatNeverCame) {
  const int port = free_port();
  const auto out = run_all({info_for(0, 3, port)}, {"r0"}, 300);
  ASSERT_TRUE(out[0].failed);
  EXPECT_EQ(ErrorCode::timeout, out[0].code);
  EXPECT_NE(std::string::npos, out[0].message.find("ranks 1, 2 did not connect")) << out[0].message;
  EXPECT_GE(out[0].seconds, 0.29);
  EXPECT_LT(out[0].seconds, 5.0);
}

TEST(TcpRendezvous, PeerWithoutRank0NamesTheAddress) {
  const int port = free_port();
  const auto out = run_all({info_for(1, 2, port)}, {"r1"}, 300);
  ASSERT_TRUE(out[0].failed);
  EXPECT_EQ(ErrorCode::timeout, out[0].code);
  EXPECT_NE(std::string::npos, out[0].message.find("127.0.0.1, port " + std::to_string(port) +
                                                   " (ASYNCTP_RENDEZVOUS_PORT)"))
      << out[0].message;
  EXPECT_LT(out[0].seconds, 5.0);
}

TEST(TcpRendezvous, DisagreementsEndEveryRankWithTheSameError) {
  const int port = free_port();
  {
    SCOPED_TRACE("world size");
    const auto out = run_all({info_for(0, 3, port), info_for(1, 3, port), info_for(2, 4, port)},
                             {"a", "b", "c"}, 5'000);
    for (const Outcome& o : out) {
      ASSERT_TRUE(o.failed);
      EXPECT_EQ(ErrorCode::mismatch, o.code);
      EXPECT_NE(std::string::npos, o.message.find("rank 2 says the world size is 4, rank 0 says 3"))
          << o.message;
    }
  }
  {
    SCOPED_TRACE("rank twice");
    const int port2 = free_port();
    const auto out = run_all({info_for(0, 3, port2), info_for(1, 3, port2), info_for(1, 3, port2)},
                             {"a", "b", "c"}, 5'000);
    for (const Outcome& o : out) {
      ASSERT_TRUE(o.failed);
      EXPECT_EQ(ErrorCode::mismatch, o.code);
      EXPECT_NE(std::string::npos, o.message.find("two processes claim rank 1")) << o.message;
    }
  }
}

TEST(TcpRendezvous, StrayConnectionsAreIgnored) {
  const int port = free_port();
  Outcome rank0;
  Joined server{std::thread([&] { rank0 = run_one(info_for(0, 2, port), "zero", 10'000); })};
  // Before the real peer: one connection that sends something else, one that
  // sends nothing at all (rank 0 stops waiting for its hello after 2 s).
  {
    const Fd junk = connect_when_listening(port);
    ASSERT_GE(junk.fd, 0) << "rank 0 never listened";
    const char text[] = "GET / HTTP/1.0\r\n\r\n";
    (void)send_raw(junk, text, sizeof text);
  }
  const Fd silent = connect_when_listening(port);
  ASSERT_GE(silent.fd, 0);
  const Outcome rank1 = run_one(info_for(1, 2, port), "one", 10'000);
  server.thread.join();
  for (const Outcome* o : {static_cast<const Outcome*>(&rank0), &rank1}) {
    ASSERT_FALSE(o->failed) << o->message;
    EXPECT_EQ((std::vector<std::string>{"zero", "one"}), o->records);
  }
}

TEST(TcpRendezvous, BadArgumentsAreRejectedBeforeAnyNetworking) {
  const auto message_of = [](const LaunchInfo& info, const std::string& record,
                             std::int64_t timeout) {
    try {
      all_gather_records(info, record, timeout);
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::invalid_argument, e.code());
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(std::string::npos,
            message_of(info_for(0, 2, 1), std::string(kMaxRecordBytes + 1, 'x'), 100)
                .find("record: must be at most"));
  EXPECT_NE(std::string::npos, message_of(info_for(2, 2, 1), "r", 100).find("must lie in [0, 2)"));
  EXPECT_NE(std::string::npos, message_of(info_for(0, 2, 1), "r", 0).find("timeout_ms"));
  EXPECT_NE(std::string::npos, message_of(info_for(1, 2, 0), "r", 100)
                                   .find("ASYNCTP_RENDEZVOUS_PORT: must lie in [1, 65535]"));
}

}  // namespace
}  // namespace asynctp::bootstrap
