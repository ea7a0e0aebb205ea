// Blocking-with-deadline TCP helpers for the rendezvous: every call waits at
// most until its deadline (poll), and every failure is an asynctp::Error that
// says what was being done.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace asynctp::bootstrap {

using Deadline = std::chrono::steady_clock::time_point;

// An owned socket descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Listens on every IPv4 interface at `port`; `what` names the port (and the
// variable that chose it) in errors. Fails at once when the port is taken.
Socket listen_on(int port, const std::string& what);
// An accepted connection, or an invalid Socket once `deadline` passes.
Socket accept_until(const Socket& listener, Deadline deadline);
// Connects to host:port, retrying refused connections (the listener may not
// be up yet) until `deadline`; throws Error(timeout) naming host:port and
// `what` (the port's variable) then.
Socket connect_until(const std::string& host, int port, Deadline deadline, const std::string& what);

// Whole-buffer transfers; throw Error(timeout) past the deadline and
// Error(backend) when the peer closes or the socket fails. `what` names the
// message in errors.
void send_all(const Socket& s, const void* data, std::size_t bytes, Deadline deadline,
              const std::string& what);
void recv_all(const Socket& s, void* data, std::size_t bytes, Deadline deadline,
              const std::string& what);
void send_u32(const Socket& s, std::uint32_t value, Deadline deadline, const std::string& what);
std::uint32_t recv_u32(const Socket& s, Deadline deadline, const std::string& what);

}  // namespace asynctp::bootstrap
