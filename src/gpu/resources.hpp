// Owners of GPU runtime resources (CUDA or HIP, gpu/runtime.hpp). Constructors throw Error(backend)
// naming what could not be made; destructors never throw. Each owner is movable only by being held
// in a unique_ptr or a container of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Device memory that grows on demand (contents are not kept on growth).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // At least `bytes` (256-byte aligned, as the runtime's allocator gives).
  void* ensure(std::size_t bytes, const char* what);
  void* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Pinned host memory that grows on demand: copies to and from it run on
// copy engines.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  ~PinnedMemory();
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  void* ensure(std::size_t bytes, const char* what);
  void* get() const noexcept { return ptr_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Zeroed 32-bit words in pinned host memory mapped into the device's address
// space: both the host and the device (kernels, stream memory operations)
// read and write them.
class MappedWords {
 public:
  MappedWords(std::size_t count, const char* what);
  ~MappedWords();
  MappedWords(const MappedWords&) = delete;
  MappedWords& operator=(const MappedWords&) = delete;

  std::uint32_t* host() const noexcept { return host_; }
  std::uint32_t* device() const noexcept { return device_; }
  std::size_t size() const noexcept { return count_; }

 private:
  std::uint32_t* host_ = nullptr;
  std::uint32_t* device_ = nullptr;
  std::size_t count_ = 0;
};

// A non-blocking stream: no implicit ordering with the legacy default stream.
class Stream {
 public:
  explicit Stream(const char* what);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  rt::StreamHandle get() const noexcept { return stream_; }

 private:
  rt::StreamHandle stream_ = nullptr;
};

// An event for ordering (timing disabled: cheaper to record and wait on).
class Event {
 public:
  // Events only order streams unless `timed` (timing costs a little more).
  explicit Event(const char* what, bool timed = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  rt::EventHandle get() const noexcept { return event_; }

 private:
  rt::EventHandle event_ = nullptr;
};

}  // namespace asynctp::gpu
