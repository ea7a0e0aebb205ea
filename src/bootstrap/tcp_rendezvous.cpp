#include "bootstrap/tcp_rendezvous.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "bootstrap/socket_io.hpp"
#include "core/deadline.hpp"

namespace asynctp::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;

// A rank says hello as soon as it connects, so a connection that stays silent
// (not a rank) may hold rank 0 up this long at most; a peer allows rank 0 as
// long to answer beyond its own connect deadline.
constexpr auto kHelloWindow = std::chrono::seconds(2);
// How long rank 0 spends sending the verdict to one peer: one that does not
// read it costs the others this much, no more.
constexpr auto kReplyWindow = std::chrono::seconds(5);
// Ranks named in a "did not connect" error; the rest are counted.
constexpr std::size_t kRanksListed = 16;

// The wire's reads over a socket, each bounded by `deadline`.
class SocketSource final : public ByteSource {
 public:
  SocketSource(const Socket& s, Deadline deadline, std::string what)
      : s_(s), deadline_(deadline), what_(std::move(what)) {}
  void read(void* data, std::size_t bytes) override { recv_all(s_, data, bytes, deadline_, what_); }

 private:
  const Socket& s_;
  Deadline deadline_;
  std::string what_;
};

void send_bytes(const Socket& s, const std::string& bytes, Deadline deadline,
                const std::string& what) {
  send_u32(s, static_cast<std::uint32_t>(bytes.size()), deadline, what);
  send_all(s, bytes.data(), bytes.size(), deadline, what);
}

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// A rank's hello, answered at once with (magic, version); nullopt for a
// connection that is not an asynctp rank of this version, or that is gone
// before its answer. An asynctp rank of another version gets the answer
// too, so that it can say what is wrong.
std::optional<Hello> hear_hello(const Socket& s, Deadline deadline) {
  const std::string what = "rendezvous: reading a rank's hello";
  try {
    SocketSource source(s, deadline, what);
    Hello h = read_hello(source);
    if (h.kind == Hello::Kind::not_a_rank) return std::nullopt;
    send_u32(s, kRendezvousMagic, deadline, what);
    send_u32(s, kRendezvousVersion, deadline, what);
    if (h.kind != Hello::Kind::rank) return std::nullopt;
    return h;
  } catch (const Error&) {
    return std::nullopt;  // a stray or broken connection must not end the job
  }
}

// "" when `h` may join; else why the job fails.
std::string check_hello(const Hello& h, int world, const std::map<int, std::string>& records) {
  if (static_cast<std::int64_t>(h.world_size) != world) {
    return "rendezvous: rank " + std::to_string(h.rank) + " says the world size is " +
           std::to_string(h.world_size) + ", rank 0 says " + std::to_string(world);
  }
  if (h.rank == 0 || static_cast<std::int64_t>(h.rank) >= world) {
    return "rendezvous: a peer claims rank " + std::to_string(h.rank) +
           ", which is not a peer rank in [1, " + std::to_string(world) + ")";
  }
  if (records.count(static_cast<int>(h.rank))) {
    return "rendezvous: two processes claim rank " + std::to_string(h.rank);
  }
  return "";
}

// "ranks 1, 2 did not connect" with at most kRanksListed ranks named; found
// in O(ranks seen), whatever the world size.
std::string missing_ranks(int world, const std::map<int, std::string>& records) {
  const std::size_t missing = static_cast<std::size_t>(world) - records.size();
  std::string out;
  std::size_t listed = 0;
  for (int r = 1; r < world && listed < kRanksListed; ++r) {
    if (records.count(r)) continue;
    out += (listed++ ? ", " : "") + std::to_string(r);
  }
  if (missing > listed) out += " and " + std::to_string(missing - listed) + " more";
  return (missing > 1 ? "ranks " : "rank ") + out;
}

// Rank 0: collect every peer's hello, then send everyone the same verdict.
std::vector<std::string> serve(const LaunchInfo& info, const std::string& record,
                               Deadline deadline) {
  const int world = info.world_size;
  const std::string port = describe_rendezvous_port(info);
  const Socket listener = listen_on(info.rendezvous_port, port);
  std::vector<Socket> peers;  // every rank that said hello, to be told the verdict
  std::map<int, std::string> records{{0, record}};
  std::string error;
  ErrorCode code = ErrorCode::mismatch;
  // Until every peer slot has said hello: after an error too, so that the
  // ranks still coming hear the same error rather than a closed port.
  while (static_cast<std::int64_t>(peers.size()) < world - 1) {
    Socket s = accept_until(listener, deadline);
    if (!s.valid()) break;  // the deadline passed
    auto hello = hear_hello(s, std::min(deadline, Clock::now() + kHelloWindow));
    if (!hello) continue;
    peers.push_back(std::move(s));
    if (!error.empty()) continue;
    error = check_hello(*hello, world, records);
    if (error.empty()) records.emplace(static_cast<int>(hello->rank), std::move(hello->record));
  }
  if (error.empty() && static_cast<std::int64_t>(records.size()) < world) {
    code = ErrorCode::timeout;
    error = "rendezvous on " + port + ": " + missing_ranks(world, records) +
            " did not connect before the timeout";
  }

  // The verdict goes to everyone who came; a peer that cannot be told is not
  // worth failing the others for (it times out on its own).
  for (const Socket& s : peers) {
    const Deadline reply_deadline = Clock::now() + kReplyWindow;
    try {
      if (error.empty()) {
        send_u32(s, kStatusOk, reply_deadline, "rendezvous: sending the records");
        for (const auto& [rank, r] : records) {
          send_bytes(s, r, reply_deadline, "rendezvous: sending the records");
        }
      } else {
        send_u32(s, code == ErrorCode::timeout ? kStatusTimeout : kStatusMismatch, reply_deadline,
                 "rendezvous: sending the error");
        send_bytes(s, error, reply_deadline, "rendezvous: sending the error");
      }
    } catch (const Error&) {
    }
  }
  if (!error.empty()) throw Error(code, error);
  std::vector<std::string> out;
  out.reserve(records.size());
  for (auto& [rank, r] : records) out.push_back(std::move(r));
  return out;
}

// A peer: say hello to rank 0, check that rank 0 answers, wait for its verdict.
std::vector<std::string> join(const LaunchInfo& info, const std::string& record,
                              Deadline connect_deadline, Deadline reply_deadline) {
  const std::string port = describe_rendezvous_port(info);
  const std::string self = "rendezvous: rank " + std::to_string(info.rank);
  const std::string at = "rank 0 at " + info.master_addr + ", " + port;
  const Socket s = connect_until(info.master_addr, info.rendezvous_port, connect_deadline, port);
  // Rank 0 answers a hello at once: one that does not come means something
  // else holds the port.
  const Deadline answer_deadline = std::max(connect_deadline, Clock::now() + kHelloWindow);
  const std::string hello = self + " saying hello to " + at;
  send_u32(s, kRendezvousMagic, answer_deadline, hello);
  send_u32(s, kRendezvousVersion, answer_deadline, hello);
  send_u32(s, static_cast<std::uint32_t>(info.world_size), answer_deadline, hello);
  send_u32(s, static_cast<std::uint32_t>(info.rank), answer_deadline, hello);
  send_bytes(s, record, answer_deadline, hello);

  const std::string answer = self + " waiting for " + at +
                             " to answer its hello (no answer: another service holds that port, "
                             "e.g. a TCPStore; ASYNCTP_RENDEZVOUS_PORT chooses another)";
  const std::uint32_t magic = recv_u32(s, answer_deadline, answer);
  if (magic != kRendezvousMagic) {
    throw Error(ErrorCode::backend,
                answer + ": the answer (" + hex(magic) + ") is not asynctp's rendezvous");
  }
  const std::uint32_t version = recv_u32(s, answer_deadline, answer);
  if (version != kRendezvousVersion) {
    throw Error(ErrorCode::mismatch, self + ": " + at + " speaks rendezvous version " +
                                         std::to_string(version) + ", this rank " +
                                         std::to_string(kRendezvousVersion) +
                                         " (ranks of different asynctp builds)");
  }

  const std::string wait = self + " waiting for " + at + " to hear from every rank";
  SocketSource source(s, reply_deadline, wait);
  return read_verdict(source, info.world_size, wait);
}

}  // namespace

std::vector<std::string> all_gather_records(const LaunchInfo& info, const std::string& record,
                                            std::int64_t timeout_ms) {
  if (record.size() > kMaxRecordBytes) {
    throw Error(ErrorCode::invalid_argument, "record: must be at most " +
                                                 std::to_string(kMaxRecordBytes) + " bytes, got " +
                                                 std::to_string(record.size()));
  }
  if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size) {
    throw Error(ErrorCode::invalid_argument, "launch info: rank " + std::to_string(info.rank) +
                                                 " must lie in [0, " +
                                                 std::to_string(info.world_size) + ")");
  }
  if (timeout_ms <= 0) {
    throw Error(ErrorCode::invalid_argument,
                "timeout_ms: must be positive, got " + std::to_string(timeout_ms));
  }
  if (info.world_size == 1) return {record};
  if (info.rendezvous_port < 1 || info.rendezvous_port > 65535) {
    throw Error(ErrorCode::invalid_argument, std::string(kRendezvousPortVariable) +
                                                 ": must lie in [1, 65535], got " +
                                                 std::to_string(info.rendezvous_port));
  }
  // Saturating: a huge timeout (a caller's "forever") must not overflow the
  // clock into the past and expire at once.
  const Deadline deadline = core::deadline_after(timeout_ms);
  if (info.rank == 0) return serve(info, record, deadline);
  // Rank 0 answers only when everyone has come or its own timeout passed,
  // and it may have started later than this rank: wait for it twice as long.
  const std::int64_t twice = timeout_ms > INT64_MAX / 2 ? INT64_MAX : 2 * timeout_ms;
  return join(info, record, deadline, core::deadline_after(twice));
}

}  // namespace asynctp::bootstrap
