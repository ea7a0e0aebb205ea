#include "gpu/resources.hpp"

#include <string>

#include "gpu/check.hpp"

namespace asynctp::gpu {

namespace {

rt::Status allocate(MemoryPlace place, void** p, std::size_t bytes) {
  return place == MemoryPlace::device ? rt::device_malloc(p, bytes)
                                      : rt::host_alloc_pinned(p, bytes);
}

// Work still queued may use the block: either free waits for the device.
rt::Status release(MemoryPlace place, void* p) {
  return place == MemoryPlace::device ? rt::device_free(p) : rt::host_free(p);
}

}  // namespace

template <MemoryPlace Place>
GrowingMemory<Place>::~GrowingMemory() {
  if (ptr_) (void)release(Place, ptr_);
}

template <MemoryPlace Place>
void* GrowingMemory<Place>::ensure(std::size_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) {
    check(release(Place, ptr_), what);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  check(allocate(Place, &ptr_, bytes), what);
  bytes_ = bytes;
  return ptr_;
}

template class GrowingMemory<MemoryPlace::device>;
template class GrowingMemory<MemoryPlace::pinned_host>;

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

Stream::Stream(const char* what) { check(rt::stream_create_non_blocking(&handle_), what); }

Stream::~Stream() {
  if (handle_) (void)rt::stream_destroy(handle_);
}

Event::Event(const char* what, bool timed) { check(rt::event_create(&handle_, timed), what); }

Event::~Event() {
  if (handle_) (void)rt::event_destroy(handle_);
}

}  // namespace asynctp::gpu
