// What a broken or hostile connection on the rendezvous port can do: nothing
// worse than cost rank 0 a few seconds. Rank 0 must not crash, hang, grow
// its memory by what a length on the wire says, or give a rank's slot to a
// connection that did not finish a valid hello; a peer must not believe a
// fake rank 0 either.
//
//   RendezvousHostile.Rank0SurvivesEveryBadHello  one bad connection of each kind
//                                                 before the real peer: each closed by
//                                                 rank 0, the job completes, records right
//   RendezvousHostile.DribbledHelloCostsSeconds   a hello sent a byte at a time: rank 0
//                                                 moves on after its hello window
//   RendezvousHostile.FloodOfStrays               200 junk connections, then the peer
//   RendezvousHostile.OtherVersionIsToldSo        an asynctp rank of another protocol
//                                                 version gets rank 0's version, and a
//                                                 peer answered so says which
//   RendezvousHostile.PeerRejectsABadRank0        a fake rank 0 that sends a huge record
//                                                 length, an unknown status, or nothing:
//                                                 bounded errors, no allocation
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous_support.hpp"

namespace asynctp::bootstrap {
namespace {

using namespace test;

// The words of a hello up to (and including) the record length.
std::vector<std::uint32_t> hello_words(std::uint32_t world, std::uint32_t rank,
                                       std::uint32_t length) {
  return {kMagic, kVersion, world, rank, length};
}

bool send_words(const Fd& s, const std::vector<std::uint32_t>& words) {
  for (std::uint32_t w : words) {
    if (!send_word(s, w)) return false;
  }
  return true;
}

struct BadHello {
  const char* name;
  // Writes the bad hello on a fresh connection to rank 0.
  void (*send)(const Fd& s);
};

const BadHello kBadHellos[] = {
    {"record length 0xFFFFFFFF",
     [](const Fd& s) { (void)send_words(s, hello_words(2, 1, 0xFFFFFFFFu)); }},
    {"record length one past the limit",
     [](const Fd& s) {
       (void)send_words(s, hello_words(2, 1, static_cast<std::uint32_t>(kMaxRecordBytes + 1)));
     }},
    {"4 KiB of random bytes",
     [](const Fd& s) {
       std::mt19937 rng(12345);
       std::vector<unsigned char> junk(4096);
       for (unsigned char& b : junk) b = static_cast<unsigned char>(rng());
       (void)send_raw(s, junk.data(), junk.size());
     }},
    {"a hello cut short",
     [](const Fd& s) {
       (void)send_words(s, {kMagic, kVersion, 2u});
     }},
    {"a record shorter than its length",
     [](const Fd& s) {
       (void)send_words(s, hello_words(2, 1, 1000));
       (void)send_raw(s, "short", 5);
     }},
};

TEST(RendezvousHostile, Rank0SurvivesEveryBadHello) {
  for (const BadHello& bad : kBadHellos) {
    SCOPED_TRACE(bad.name);
    const int port = free_port();
    Outcome rank0;
    Joined server{std::thread([&] { rank0 = run_one(info_for(0, 2, port), "zero", 10'000); })};
    {
      const Fd s = connect_when_listening(port);
      ASSERT_GE(s.fd, 0) << "rank 0 never listened";
      bad.send(s);
      // Rank 0 closes it within its hello window (2 s) and answers nothing.
      EXPECT_TRUE(closed_by_peer(s, std::chrono::seconds(4)));
    }
    // The bad hellos above claim rank 1: the real rank 1 must still get its slot.
    const Outcome rank1 = run_one(info_for(1, 2, port), "one", 10'000);
    server.thread.join();
    for (const Outcome* o : {static_cast<const Outcome*>(&rank0), &rank1}) {
      ASSERT_FALSE(o->failed) << o->message;
      EXPECT_EQ((std::vector<std::string>{"zero", "one"}), o->records);
      EXPECT_LT(o->seconds, 6.0);
    }
  }
}

TEST(RendezvousHostile, DribbledHelloCostsSeconds) {
  const int port = free_port();
  Outcome rank0;
  Joined server{std::thread([&] { rank0 = run_one(info_for(0, 2, port), "zero", 20'000); })};
  const Fd s = connect_when_listening(port);
  ASSERT_GE(s.fd, 0);
  const auto start = Clock::now();
  // A valid hello, one byte every 300 ms: 20 bytes would take 6 s.
  std::vector<std::uint32_t> wire;
  for (std::uint32_t w : hello_words(2, 1, 0)) wire.push_back(htonl(w));
  const auto* bytes = reinterpret_cast<const char*>(wire.data());
  bool closed = false;
  for (std::size_t i = 0; i < wire.size() * 4 && !closed; ++i) {
    closed = !send_raw(s, bytes + i, 1);
    if (!closed) closed = closed_by_peer(s, std::chrono::milliseconds(300));
  }
  const double held = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(closed) << "rank 0 still reading the dribble after " << held << " s";
  EXPECT_LT(held, 4.0);
  const Outcome rank1 = run_one(info_for(1, 2, port), "one", 10'000);
  server.thread.join();
  ASSERT_FALSE(rank0.failed) << rank0.message;
  ASSERT_FALSE(rank1.failed) << rank1.message;
}

TEST(RendezvousHostile, FloodOfStrays) {
  const int port = free_port();
  Outcome rank0;
  Joined server{std::thread([&] { rank0 = run_one(info_for(0, 2, port), "zero", 20'000); })};
  ASSERT_GE(connect_when_listening(port).fd, 0);
  for (int i = 0; i < 200; ++i) {
    const Fd s = connect_when_listening(port);
    ASSERT_GE(s.fd, 0);
    if (i % 2) (void)send_words(s, {0xDEADBEEFu});
  }
  const Outcome rank1 = run_one(info_for(1, 2, port), "one", 10'000);
  server.thread.join();
  ASSERT_FALSE(rank0.failed) << rank0.message;
  ASSERT_FALSE(rank1.failed) << rank1.message;
  EXPECT_EQ((std::vector<std::string>{"zero", "one"}), rank1.records);
}

// A fake rank 0 on `listener`: accepts one connection, reads its hello and
// hands the connection to `act`.
void fake_rank0(const Fd& listener, const std::function<void(const Fd&)>& act) {
  const Fd s = accept_within(listener, std::chrono::seconds(5));
  if (s.fd < 0) return;
  std::uint32_t words[5];
  if (!recv_raw(s, words, sizeof words)) return;
  std::string record(ntohl(words[4]), '\0');
  if (!recv_raw(s, record.data(), record.size())) return;
  act(s);
}

TEST(RendezvousHostile, OtherVersionIsToldSo) {
  {
    SCOPED_TRACE("rank 0 answers a rank of another version");
    const int port = free_port();
    Outcome rank0;
    Joined server{std::thread([&] { rank0 = run_one(info_for(0, 2, port), "zero", 300); })};
    const Fd s = connect_when_listening(port);
    ASSERT_GE(s.fd, 0);
    ASSERT_TRUE(send_words(s, {kMagic, kVersion + 1}));
    EXPECT_EQ(std::optional<std::uint32_t>(kMagic), recv_word(s));
    EXPECT_EQ(std::optional<std::uint32_t>(kVersion), recv_word(s));
    EXPECT_TRUE(closed_by_peer(s, std::chrono::seconds(3)));
    server.thread.join();
    ASSERT_TRUE(rank0.failed);
    EXPECT_TRUE(contains(rank0.message, "rank 1 did not connect")) << rank0.message;
  }
  {
    SCOPED_TRACE("a peer answered by rank 0 of another version");
    Fd listener = listen_any(0);
    const int port = port_of(listener);
    Joined server{std::thread([&] {
      fake_rank0(listener, [](const Fd& s) { (void)send_words(s, {kMagic, kVersion + 1}); });
    })};
    const Outcome o = run_one(info_for(1, 2, port), "one", 10'000);
    server.thread.join();
    ASSERT_TRUE(o.failed);
    EXPECT_EQ(ErrorCode::mismatch, o.code);
    EXPECT_TRUE(contains(o.message, "speaks rendezvous version " + std::to_string(kVersion + 1) +
                                        ", this rank " + std::to_string(kVersion)))
        << o.message;
    EXPECT_LT(o.seconds, 2.0);
  }
}

TEST(RendezvousHostile, PeerRejectsABadRank0) {
  constexpr std::int64_t kTimeoutMs = 300;
  const struct {
    const char* name;
    std::vector<std::uint32_t> after_answer;  // sent after a valid answer to the hello
    ErrorCode code;
    const char* needle;
    double within_s;
  } cases[] = {
      {"huge record length", {0u, 0xFFFFFFF0u}, ErrorCode::backend, "more than the limit", 2.0},
      {"unknown status", {7u}, ErrorCode::backend, "unknown status 0x00000007", 2.0},
      {"huge error length", {1u, 0xFFFFFFF0u}, ErrorCode::backend, "more than the limit", 2.0},
      // No verdict: the peer gives up at twice its timeout (rank 0 may have
      // started later than it) plus its own hello window, naming the wait.
      {"silence", {}, ErrorCode::timeout, "to hear from every rank", 4.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Fd listener = listen_any(0);
    const int port = port_of(listener);
    Joined server{std::thread([&] {
      fake_rank0(listener, [&](const Fd& s) {
        (void)send_words(s, {kMagic, kVersion});
        (void)send_words(s, c.after_answer);
        std::this_thread::sleep_for(std::chrono::milliseconds(3 * kTimeoutMs));
      });
    })};
    const Outcome o = run_one(info_for(1, 2, port), "one", kTimeoutMs);
    server.thread.join();
    ASSERT_TRUE(o.failed);
    EXPECT_EQ(c.code, o.code) << o.message;
    EXPECT_TRUE(contains(o.message, c.needle)) << o.message;
    EXPECT_LT(o.seconds, c.within_s);
  }
}

}  // namespace
}  // namespace asynctp::bootstrap
