// Support for the rendezvous tests: ranks as threads of this process on
// 127.0.0.1, free ports, and raw sockets that play what else may sit on a
// rendezvous port (a TCPStore, a scanner, a broken or hostile peer).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/error.hpp"
#include "bootstrap/tcp_rendezvous.hpp"
#include "core/rank_threads.hpp"

namespace asynctp::bootstrap::test {

using Clock = std::chrono::steady_clock;

// An owned descriptor (the tests' raw sockets).
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

inline sockaddr_in address(std::uint32_t host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(host);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// A socket listening on every interface at `port` (0: the kernel picks), as
// a TCPStore does; invalid when the port cannot be had.
inline Fd listen_any(int port) {
  Fd s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr = address(INADDR_ANY, port);
  if (s.fd < 0 || ::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(s.fd, 64) != 0) {
    return Fd();
  }
  return s;
}

inline int port_of(const Fd& s) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

// A port nobody listens on right now (the kernel's pick for port 0).
inline int free_port() {
  const Fd s = listen_any(0);
  const int port = s.fd >= 0 ? port_of(s) : 0;
  if (port == 0) ADD_FAILURE() << "cannot pick a free port";
  return port;
}

// A port P held by a listener (returned in *holder) with P + 1 free: the
// torchrun picture, a TCPStore on MASTER_PORT. 0 when none was found.
inline int held_port_with_free_successor(Fd* holder) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    Fd s = listen_any(0);
    const int port = s.fd >= 0 ? port_of(s) : 0;
    if (port <= 0 || port >= 65535) continue;
    if (listen_any(port + 1).fd < 0) continue;  // taken: try another
    *holder = std::move(s);
    return port;
  }
  ADD_FAILURE() << "no port with a free successor";
  return 0;
}

// Connects to 127.0.0.1:port, retrying until something listens, for at most
// two seconds; invalid then.
inline Fd connect_when_listening(int port) {
  const auto give_up = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < give_up) {
    Fd s(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr = address(INADDR_LOOPBACK, port);
    if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Fd();
}

inline bool send_raw(const Fd& s, const void* data, std::size_t bytes) {
  return ::send(s.fd, data, bytes, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes);
}

inline bool send_word(const Fd& s, std::uint32_t value) {
  const std::uint32_t wire = htonl(value);
  return send_raw(s, &wire, sizeof wire);
}

// Waits (at most `limit`) until the other side closes `s` or sends
// something; true when it closed (or reset: closing with unread bytes)
// without sending.
inline bool closed_by_peer(const Fd& s, std::chrono::milliseconds limit) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((limit.count() % 1000) * 1000);
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte = 0;
  const ssize_t n = ::recv(s.fd, &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

inline bool recv_raw(const Fd& s, void* data, std::size_t bytes,
                     std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((limit.count() % 1000) * 1000);
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(s.fd, p, bytes, 0);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// The next 32-bit word from `s`, or nullopt when it closed or stayed silent.
inline std::optional<std::uint32_t> recv_word(const Fd& s) {
  std::uint32_t wire = 0;
  if (!recv_raw(s, &wire, sizeof wire)) return std::nullopt;
  return ntohl(wire);
}

// A connection accepted on `listener` within `limit`; invalid otherwise.
inline Fd accept_within(const Fd& listener, std::chrono::milliseconds limit) {
  pollfd p{listener.fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) return Fd();
  return Fd(::accept(listener.fd, nullptr, nullptr));
}

// Joins a thread on scope exit, so that a failed ASSERT cannot leave it
// joinable (std::terminate).
struct Joined {
  std::thread thread;
  ~Joined() {
    if (thread.joinable()) thread.join();
  }
};

// The rendezvous protocol's words, as a hostile peer or a fake rank 0 needs them.
inline constexpr std::uint32_t kMagic = 0x41545052u;
inline constexpr std::uint32_t kVersion = 2;

inline LaunchInfo info_for(int rank, int world, int port) {
  LaunchInfo info;
  info.launcher = "test";
  info.rank = rank;
  info.world_size = world;
  info.master_addr = "127.0.0.1";
  info.rendezvous_port = port;
  info.rendezvous_port_source = kRendezvousPortVariable;
  return info;
}

struct Outcome {
  std::vector<std::string> records;
  bool failed = false;
  ErrorCode code = ErrorCode::backend;
  std::string message;
  double seconds = 0;
};

inline Outcome run_one(const LaunchInfo& info, const std::string& record, std::int64_t timeout_ms) {
  Outcome o;
  const auto start = Clock::now();
  try {
    o.records = all_gather_records(info, record, timeout_ms);
  } catch (const Error& e) {
    o.failed = true;
    o.code = e.code();
    o.message = e.what();
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return o;
}

// Runs one rendezvous call per entry of `infos`, each on its own thread.
inline std::vector<Outcome> run_all(const std::vector<LaunchInfo>& infos,
                                    const std::vector<std::string>& records,
                                    std::int64_t timeout_ms) {
  std::vector<Outcome> out(infos.size());
  core::run_on_rank_threads(static_cast<int>(infos.size()), [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    out[k] = run_one(infos[k], records[k], timeout_ms);
  });
  return out;
}

inline bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace asynctp::bootstrap::test
