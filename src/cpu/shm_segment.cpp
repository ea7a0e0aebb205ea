#include "cpu/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "asynctp/error.hpp"

namespace asynctp::cpu {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& name, int error) {
  throw Error(ErrorCode::backend,
              "shared memory " + name + ": " + what + ": " + std::strerror(error));
}

// Closes the descriptor whatever happens: a mapping does not need it.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void* map(int fd, std::size_t bytes, const std::string& name) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail("mmap of " + std::to_string(bytes) + " bytes", name, errno);
  return data;
}

// A new file's size, its pages reserved, then mapped.
void* size_and_map(int fd, std::size_t bytes, const std::string& name) {
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) fail("ftruncate", name, errno);
  // Reserve the pages now: tmpfs otherwise hands out pages on first touch
  // and a full /dev/shm kills the process with SIGBUS mid-call.
  const int reserved = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (reserved != 0 && reserved != EOPNOTSUPP && reserved != EINVAL) {
    fail("reserving " + std::to_string(bytes) + " bytes (is /dev/shm full?)", name, reserved);
  }
  return map(fd, bytes, name);
}

[[noreturn]] void exists(const std::string& name) {
  throw Error(ErrorCode::invalid_argument,
              "id: shared memory " + name +
                  " exists already (an id makes one group; make a new one with "
                  "make_unique_id)");
}

}  // namespace

ShmSegment::~ShmSegment() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ShmSegment ShmSegment::create(const std::string& name, std::size_t bytes, const Fill& fill) {
  if (auto made = create_unnamed_then_link(name, bytes, fill)) return std::move(*made);
  const Fd fd{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  if (fd.fd < 0) {
    if (errno == EEXIST) exists(name);
    fail("shm_open (create)", name, errno);
  }
  try {
    ShmSegment segment(size_and_map(fd.fd, bytes, name), bytes);
    if (fill) fill(segment.data());
    return segment;
  } catch (...) {
    unlink(name);
    throw;
  }
}

std::optional<ShmSegment> ShmSegment::create_unnamed_then_link(const std::string& name,
                                                               std::size_t bytes,
                                                               const Fill& fill) {
  const Fd fd{::open(kDirectory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)};
  if (fd.fd < 0) return std::nullopt;  // no unnamed files there: the named way
  ShmSegment segment(size_and_map(fd.fd, bytes, name), bytes);
  if (fill) fill(segment.data());
  // linkat through /proc/self/fd needs no privilege (AT_EMPTY_PATH would),
  // and like O_EXCL it fails when the name exists.
  const std::string self = "/proc/self/fd/" + std::to_string(fd.fd);
  const std::string path = kDirectory + name;
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    if (errno == EEXIST) exists(name);
    if (errno == ENOENT) return std::nullopt;  // no /proc: the named way
    fail("linkat (publishing the filled segment)", name, errno);
  }
  return segment;
}

std::optional<ShmSegment> ShmSegment::open(const std::string& name, std::size_t min_bytes) {
  const Fd fd{::shm_open(name.c_str(), O_RDWR, 0)};
  if (fd.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("shm_open", name, errno);
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail("fstat", name, errno);
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes < min_bytes || bytes == 0) return std::nullopt;
  return ShmSegment(map(fd.fd, bytes, name), bytes);
}

void ShmSegment::unlink(const std::string& name) noexcept { ::shm_unlink(name.c_str()); }

}  // namespace asynctp::cpu
