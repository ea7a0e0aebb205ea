// Owners of GPU runtime resources (CUDA or HIP, gpu/runtime.hpp). Constructors throw Error(backend)
// naming what could not be made; destructors never throw. Each owner is movable only by being held
// in a unique_ptr or a container of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Memory that grows on demand (contents are not kept on growth): on the
// device, or pinned host memory, whose copies to and from the device run on
// copy engines.
enum class MemoryPlace { device, pinned_host };

template <MemoryPlace Place>
class GrowingMemory {
 public:
  GrowingMemory() = default;
  ~GrowingMemory();
  GrowingMemory(const GrowingMemory&) = delete;
  GrowingMemory& operator=(const GrowingMemory&) = delete;

  // At least `bytes` (256-byte aligned, as the runtime's allocators give).
  void* ensure(std::size_t bytes, const char* what);
  void* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

using DeviceMemory = GrowingMemory<MemoryPlace::device>;
using PinnedMemory = GrowingMemory<MemoryPlace::pinned_host>;
extern template class GrowingMemory<MemoryPlace::device>;
extern template class GrowingMemory<MemoryPlace::pinned_host>;

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

// What the owners of one runtime handle share (a stream, an event): not
// copyable, the handle readable; each owner makes it and destroys it.
template <typename Handle>
class RuntimeHandle {
 public:
  RuntimeHandle() = default;
  RuntimeHandle(const RuntimeHandle&) = delete;
  RuntimeHandle& operator=(const RuntimeHandle&) = delete;
  Handle get() const noexcept { return handle_; }

 protected:
  ~RuntimeHandle() = default;
  Handle handle_ = nullptr;
};

// A non-blocking stream: no implicit ordering with the legacy default stream.
class Stream : public RuntimeHandle<rt::StreamHandle> {
 public:
  explicit Stream(const char* what);
  ~Stream();
};

// An event for ordering (timing disabled: cheaper to record and wait on).
class Event : public RuntimeHandle<rt::EventHandle> {
 public:
  // Events only order streams unless `timed` (timing costs a little more).
  explicit Event(const char* what, bool timed = false);
  ~Event();
};

}  // namespace asynctp::gpu
