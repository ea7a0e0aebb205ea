// The rendezvous's messages decoded from buffers: what rank 0 makes of a
// hello and a peer of rank 0's verdict, for well-formed, short, stray and
// oversized messages (the cases tests/fuzz/rendezvous_fuzz.cpp explores at
// random).
#include "bootstrap/rendezvous_wire.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {
namespace {

std::string words(const std::vector<std::uint32_t>& values, const std::string& tail = "") {
  std::string out;
  for (std::uint32_t v : values) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  }
  return out + tail;
}

Hello hello_of(const std::string& bytes) {
  BufferSource source(bytes.data(), bytes.size());
  return read_hello(source);
}

TEST(RendezvousWire, ReadsARanksHello) {
  const std::string record("a\0b\0c", 5);  // records may hold NUL bytes
  const Hello h = hello_of(words({kRendezvousMagic, kRendezvousVersion, 4, 3, 5}) + record);
  EXPECT_EQ(Hello::Kind::rank, h.kind);
  EXPECT_EQ(4u, h.world_size);
  EXPECT_EQ(3u, h.rank);
  EXPECT_EQ(record, h.record);
}

TEST(RendezvousWire, TellsStrangersAndOtherVersions) {
  EXPECT_EQ(Hello::Kind::not_a_rank, hello_of("GET / HTTP/1.1\r\n\r\n").kind);
  const Hello other = hello_of(words({kRendezvousMagic, 1}));
  EXPECT_EQ(Hello::Kind::other_version, other.kind);
  EXPECT_EQ(1u, other.version);
}

TEST(RendezvousWire, ShortOrOversizedMessagesAreErrors) {
  EXPECT_THROW(hello_of(""), Error);
  EXPECT_THROW(hello_of(words({kRendezvousMagic, kRendezvousVersion, 2})), Error);
  // A length over the limit is refused before anything is allocated or read.
  try {
    hello_of(words({kRendezvousMagic, kRendezvousVersion, 2, 1, 0xffffffffu}));
    FAIL() << "an oversized record was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("more than the limit")) << e.what();
  }
  // A record that says 10 bytes and brings 3.
  EXPECT_THROW(hello_of(words({kRendezvousMagic, kRendezvousVersion, 2, 1, 10}, "abc")), Error);
}

std::vector<std::string> verdict_of(const std::string& bytes, int world) {
  BufferSource source(bytes.data(), bytes.size());
  return read_verdict(source, world, "test");
}

TEST(RendezvousWire, ReadsEveryVerdict) {
  EXPECT_EQ((std::vector<std::string>{"r0", ""}),
            verdict_of(words({kStatusOk, 2}, "r0") + words({0}), 2));
  try {
    verdict_of(words({kStatusTimeout, 4}, "late"), 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::timeout, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("late"));
  }
  try {
    verdict_of(words({kStatusMismatch, 3}, "bad"), 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::mismatch, e.code());
  }
  try {
    verdict_of(words({7}), 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("unknown status 0x00000007"));
  }
  EXPECT_THROW(verdict_of(words({kStatusOk, 2}, "r0"), 2), Error);  // a record short
}

}  // namespace
}  // namespace asynctp::bootstrap
