// One POSIX shared-memory segment mapped into this process: made (by one
// rank) or opened (by its peers) by name, unmapped when the object goes.
// The name is separate from the mapping: once every process of a group has
// mapped a segment, its name is unlinked (unlink) and the memory lives
// exactly as long as the mappings, so no process's end, however abrupt,
// leaves anything in /dev/shm.
//
// A made segment's name appears only once its contents are complete (the
// file is made unnamed, filled, then linked under its name), so whoever
// finds a name can read who made it: what lets cpu/shm_sweep.hpp tell a
// segment whose every holder died from one being set up.
#pragma once

#include <cstddef>
#include <functional>
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

  // Writes a new segment's first contents before its name appears.
  using Fill = std::function<void(void* data)>;

  // A new segment of `bytes`, zero-filled then given to `fill`, its pages
  // reserved up front (so that a full /dev/shm is an error here, not a
  // SIGBUS later), published under `name` only after `fill` returned (where
  // the system cannot make unnamed shared memory files, the name appears
  // first and `fill` runs right after). Throws Error(invalid_argument) when
  // the name exists already, Error(backend) otherwise; nothing stays behind
  // under the name on failure.
  static ShmSegment create(const std::string& name, std::size_t bytes, const Fill& fill = {});
  // The segment `name` mapped whole, when it exists and holds at least
  // `min_bytes` (its maker may still be sizing it); nullopt otherwise.
  // Throws Error(backend) on other failures.
  static std::optional<ShmSegment> open(const std::string& name, std::size_t min_bytes);
  // Removes the name (the mappings stay); a name already gone is fine.
  static void unlink(const std::string& name) noexcept;

  // Where the segments' names live as files (glibc's shm_open opens its
  // names there).
  static constexpr const char* kDirectory = "/dev/shm";

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  ShmSegment(void* data, std::size_t size) noexcept : data_(data), size_(size) {}
  // The segment made unnamed, filled and linked as `name`; nullopt where
  // the system cannot (no O_TMPFILE on the directory, no /proc).
  static std::optional<ShmSegment> create_unnamed_then_link(const std::string& name,
                                                            std::size_t bytes, const Fill& fill);
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace asynctp::cpu
