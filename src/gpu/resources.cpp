#include "gpu/resources.hpp"

#include <string>

#include "gpu/check.hpp"

namespace asynctp::gpu {

DeviceMemory::~DeviceMemory() {
  if (ptr_) (void)rt::device_free(ptr_);
}

void* DeviceMemory::ensure(std::size_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) {
    // Work still queued may use the old block: freeing waits for the device.
    check(rt::device_free(ptr_), what);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  check(rt::device_malloc(&ptr_, bytes), what);
  bytes_ = bytes;
  return ptr_;
}

PinnedMemory::~PinnedMemory() {
  if (ptr_) (void)rt::host_free(ptr_);
}

void* PinnedMemory::ensure(std::size_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) {
    check(rt::host_free(ptr_), what);  // synchronizes with queued copies
    ptr_ = nullptr;
    bytes_ = 0;
  }
  check(rt::host_alloc_pinned(&ptr_, bytes), what);
  bytes_ = bytes;
  return ptr_;
}

MappedWords::MappedWords(std::size_t count, const char* what) : count_(count) {
  void* host = nullptr;
  check(rt::host_alloc_mapped(&host, count * sizeof(std::uint32_t)), what);
  host_ = static_cast<std::uint32_t*>(host);
  for (std::size_t i = 0; i < count; ++i) host_[i] = 0;
  void* device = nullptr;
  const rt::Status e = rt::host_device_pointer(&device, host);
  if (e != rt::kSuccess) {
    (void)rt::host_free(host);
    check(e, what);
  }
  device_ = static_cast<std::uint32_t*>(device);
}

MappedWords::~MappedWords() {
  if (host_) (void)rt::host_free(host_);
}

Stream::Stream(const char* what) { check(rt::stream_create_non_blocking(&stream_), what); }

Stream::~Stream() {
  if (stream_) (void)rt::stream_destroy(stream_);
}

Event::Event(const char* what, bool timed) { check(rt::event_create(&event_, timed), what); }

Event::~Event() {
  if (event_) (void)rt::event_destroy(event_);
}

}  // namespace asynctp::gpu
