#include "bootstrap/tcp_rendezvous.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "bootstrap/socket_io.hpp"

namespace asynctp::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;

// "ATPR": tells a stray connection (a port scanner, another job on a reused
// port) from a rank.
constexpr std::uint32_t kMagic = 0x41545052u;
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kStatusOk = 0;
constexpr std::uint32_t kStatusMismatch = 1;
constexpr std::uint32_t kStatusTimeout = 2;

struct Hello {
  std::uint32_t world_size = 0;
  std::uint32_t rank = 0;
  std::string record;
};

std::string recv_bytes(const Socket& s, Deadline deadline, const std::string& what) {
  const std::uint32_t length = recv_u32(s, deadline, what);
  if (length > kMaxRecordBytes) {
    throw Error(ErrorCode::backend, what + ": a record of " + std::to_string(length) +
                                        " bytes, more than the limit " +
                                        std::to_string(kMaxRecordBytes));
  }
  std::string out(length, '\0');
  recv_all(s, out.data(), out.size(), deadline, what);
  return out;
}

void send_bytes(const Socket& s, const std::string& bytes, Deadline deadline,
                const std::string& what) {
  send_u32(s, static_cast<std::uint32_t>(bytes.size()), deadline, what);
  send_all(s, bytes.data(), bytes.size(), deadline, what);
}

// A hello, or nullopt for a connection that is not an asynctp rank.
std::optional<Hello> read_hello(const Socket& s, Deadline deadline) {
  const std::string what = "rendezvous: reading a rank's hello";
  try {
    if (recv_u32(s, deadline, what) != kMagic) return std::nullopt;
    if (recv_u32(s, deadline, what) != kVersion) return std::nullopt;
    Hello h;
    h.world_size = recv_u32(s, deadline, what);
    h.rank = recv_u32(s, deadline, what);
    h.record = recv_bytes(s, deadline, what);
    return h;
  } catch (const Error&) {
    return std::nullopt;  // a stray or broken connection must not end the job
  }
}

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// Rank 0: collect every peer's hello, then send everyone the same verdict.
std::vector<std::string> serve(const LaunchInfo& info, const std::string& record,
                               Deadline deadline) {
  const int world = info.world_size;
  const Socket listener = listen_on(info.master_port);
  std::vector<Socket> peers;
  std::vector<Hello> hellos;
  while (static_cast<int>(hellos.size()) < world - 1) {
    Socket s = accept_until(listener, deadline);
    if (!s.valid()) break;  // the deadline passed
    // A rank says hello as soon as it connects; a connection that stays
    // silent (not a rank) may not hold up the others for long.
    const Deadline hello_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(2));
    if (auto hello = read_hello(s, hello_deadline)) {
      hellos.push_back(std::move(*hello));
      peers.push_back(std::move(s));
    }
  }

  std::string error;
  ErrorCode code = ErrorCode::mismatch;
  std::vector<std::string> records(static_cast<std::size_t>(world));
  std::vector<bool> seen(static_cast<std::size_t>(world), false);
  records[0] = record;
  seen[0] = true;
  for (const Hello& h : hellos) {
    if (!error.empty()) break;
    if (static_cast<int>(h.world_size) != world) {
      error = "rendezvous: rank " + std::to_string(h.rank) + " says the world size is " +
              std::to_string(h.world_size) + ", rank 0 says " + std::to_string(world);
    } else if (h.rank == 0 || static_cast<int>(h.rank) >= world) {
      error = "rendezvous: a peer claims rank " + std::to_string(h.rank) +
              ", which is not a peer rank in [1, " + std::to_string(world) + ")";
    } else if (seen[h.rank]) {
      error = "rendezvous: two processes claim rank " + std::to_string(h.rank);
    } else {
      seen[h.rank] = true;
      records[h.rank] = h.record;
    }
  }
  if (error.empty()) {
    std::vector<int> missing;
    for (int r = 1; r < world; ++r) {
      if (!seen[static_cast<std::size_t>(r)]) missing.push_back(r);
    }
    if (!missing.empty()) {
      code = ErrorCode::timeout;
      error = "rendezvous on MASTER_PORT " + std::to_string(info.master_port) + ": rank" +
              (missing.size() > 1 ? "s " : " ") + list(missing) +
              " did not connect before the timeout";
    }
  }

  // The verdict goes to everyone who came; a peer that cannot be told is not
  // worth failing the others for (it times out on its own).
  const Deadline reply_deadline = Clock::now() + std::chrono::seconds(5);
  for (const Socket& s : peers) {
    try {
      if (error.empty()) {
        send_u32(s, kStatusOk, reply_deadline, "rendezvous: sending the records");
        for (const std::string& r : records) {
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
  return records;
}

// A peer: say hello to rank 0 and wait for its verdict.
std::vector<std::string> join(const LaunchInfo& info, const std::string& record,
                              Deadline connect_deadline, Deadline reply_deadline) {
  const Socket s = connect_until(info.master_addr, info.master_port, connect_deadline);
  const std::string hello = "rendezvous: rank " + std::to_string(info.rank) + " saying hello";
  send_u32(s, kMagic, connect_deadline, hello);
  send_u32(s, kVersion, connect_deadline, hello);
  send_u32(s, static_cast<std::uint32_t>(info.world_size), connect_deadline, hello);
  send_u32(s, static_cast<std::uint32_t>(info.rank), connect_deadline, hello);
  send_bytes(s, record, connect_deadline, hello);

  const std::string wait = "rendezvous: rank " + std::to_string(info.rank) +
                           " waiting for rank 0 at " + info.master_addr + ":" +
                           std::to_string(info.master_port);
  const std::uint32_t status = recv_u32(s, reply_deadline, wait);
  if (status != kStatusOk) {
    const std::string error = recv_bytes(s, reply_deadline, wait);
    throw Error(status == kStatusTimeout ? ErrorCode::timeout : ErrorCode::mismatch, error);
  }
  std::vector<std::string> records(static_cast<std::size_t>(info.world_size));
  for (std::string& r : records) r = recv_bytes(s, reply_deadline, wait);
  return records;
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
  if (info.master_port < 1 || info.master_port > 65535) {
    throw Error(ErrorCode::invalid_argument,
                "MASTER_PORT: must lie in [1, 65535], got " + std::to_string(info.master_port));
  }
  const Deadline start = Clock::now();
  const Deadline deadline = start + std::chrono::milliseconds(timeout_ms);
  if (info.rank == 0) return serve(info, record, deadline);
  // Rank 0 answers only when everyone has come or its own timeout passed,
  // and it may have started later than this rank: wait for it twice as long.
  return join(info, record, deadline, start + std::chrono::milliseconds(2 * timeout_ms));
}

}  // namespace asynctp::bootstrap
