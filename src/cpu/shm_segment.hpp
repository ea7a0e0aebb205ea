// One POSIX shared-memory segment mapped into this process: made (by one
// rank) or opened (by its peers) by name, unmapped when the object goes.
// The name is separate from the mapping: once every process of a group has
// mapped a segment, its name is unlinked (unlink) and the memory lives
// exactly as long as the mappings, so no process's end, however abrupt,
// leaves anything in /dev/shm.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace asynctp::cpu {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // A new segment of `bytes`, zero-filled, its pages reserved up front (so
  // that a full /dev/shm is an error here, not a SIGBUS later). Throws
  // Error(invalid_argument) when the name exists already, Error(backend)
  // otherwise; nothing stays behind under the name on failure.
  static ShmSegment create(const std::string& name, std::size_t bytes);
  // The segment `name` mapped whole, when it exists and holds at least
  // `min_bytes` (its maker may still be sizing it); nullopt otherwise.
  // Throws Error(backend) on other failures.
  static std::optional<ShmSegment> open(const std::string& name, std::size_t min_bytes);
  // Removes the name (the mappings stay); a name already gone is fine.
  static void unlink(const std::string& name) noexcept;

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  ShmSegment(void* data, std::size_t size) noexcept : data_(data), size_(size) {}
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace asynctp::cpu
