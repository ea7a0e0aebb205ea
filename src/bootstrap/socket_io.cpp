#include "bootstrap/socket_io.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail_errno(const std::string& what, int error) {
  throw Error(ErrorCode::backend, what + ": " + std::strerror(error));
}

// Milliseconds left for poll(), at least 0.
int millis_left(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1'000'000 ? 1'000'000 : static_cast<int>(left.count());
}

// Waits for `events` on fd; false when the deadline passed first.
bool wait_for(int fd, short events, Deadline deadline, const std::string& what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, millis_left(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) fail_errno(what + " (poll)", errno);
  }
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    fail_errno("rendezvous socket: fcntl(O_NONBLOCK)", errno);
  }
}

[[noreturn]] void timed_out(const std::string& what) {
  throw Error(ErrorCode::timeout, what + ": timed out");
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Socket listen_on(int port, const std::string& what) {
  const std::string where = "rendezvous: rank 0 listening on " + what;
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) fail_errno(where + " (socket)", errno);
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    if (error == EADDRINUSE || error == EACCES) {
      throw Error(ErrorCode::backend,
                  where + ": " + std::strerror(error) +
                      "; another process holds the port (a job's TCPStore, another job's "
                      "rendezvous): choose a free one with ASYNCTP_RENDEZVOUS_PORT");
    }
    fail_errno(where + " (bind)", error);
  }
  if (::listen(s.fd(), 1024) != 0) fail_errno(where + " (listen)", errno);
  set_nonblocking(s.fd());
  return s;
}

Socket accept_until(const Socket& listener, Deadline deadline) {
  while (true) {
    if (!wait_for(listener.fd(), POLLIN, deadline, "rendezvous: accept")) return Socket();
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return Socket(fd);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      fail_errno("rendezvous: accept", errno);
    }
  }
}

Socket connect_until(const std::string& host, int port, Deadline deadline,
                     const std::string& what) {
  const std::string where = "rendezvous: connecting to rank 0 at MASTER_ADDR " + host + ", " + what;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    throw Error(ErrorCode::invalid_argument, "MASTER_ADDR: cannot resolve '" + host +
                                                 "' to an IPv4 address (" + ::gai_strerror(rc) +
                                                 ")");
  }
  const sockaddr_in target = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);

  std::string last_error = "no attempt";
  while (Clock::now() < deadline) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) fail_errno(where + " (socket)", errno);
    int err = 0;
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!wait_for(s.fd(), POLLOUT, deadline, where)) {
          last_error = "a connection attempt was still pending";
          break;
        }
        socklen_t len = sizeof err;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err == 0) return s;
    last_error = std::strerror(err);
    // Refused or unreachable: rank 0 may not be listening yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error(ErrorCode::timeout,
              where + ": no listener before the rendezvous timeout (last: " + last_error +
                  "); is rank 0 running and MASTER_ADDR its host?");
}

void send_all(const Socket& s, const void* data, std::size_t bytes, Deadline deadline,
              const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(s.fd(), p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(s.fd(), POLLOUT, deadline, what)) timed_out(what);
      continue;
    }
    fail_errno(what + " (send)", errno);
  }
}

void recv_all(const Socket& s, void* data, std::size_t bytes, Deadline deadline,
              const std::string& what) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(s.fd(), p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) throw Error(ErrorCode::backend, what + ": the other side closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(s.fd(), POLLIN, deadline, what)) timed_out(what);
      continue;
    }
    fail_errno(what + " (recv)", errno);
  }
}

void send_u32(const Socket& s, std::uint32_t value, Deadline deadline, const std::string& what) {
  const std::uint32_t wire = htonl(value);
  send_all(s, &wire, sizeof wire, deadline, what);
}

std::uint32_t recv_u32(const Socket& s, Deadline deadline, const std::string& what) {
  std::uint32_t wire = 0;
  recv_all(s, &wire, sizeof wire, deadline, what);
  return ntohl(wire);
}

}  // namespace asynctp::bootstrap
