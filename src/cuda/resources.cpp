#include "cuda/resources.hpp"

#include <string>

#include "cuda/cuda_check.hpp"

namespace asynctp::cuda {

DeviceMemory::~DeviceMemory() {
  if (ptr_) (void)cudaFree(ptr_);
}

void* DeviceMemory::ensure(std::size_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) {
    // Work still queued may use the old block: cudaFree waits for the device.
    check_cuda(cudaFree(ptr_), what);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  check_cuda(cudaMalloc(&ptr_, bytes), what);
  bytes_ = bytes;
  return ptr_;
}

PinnedMemory::~PinnedMemory() {
  if (ptr_) (void)cudaFreeHost(ptr_);
}

void* PinnedMemory::ensure(std::size_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_) {
    check_cuda(cudaFreeHost(ptr_), what);  // synchronizes with queued copies
    ptr_ = nullptr;
    bytes_ = 0;
  }
  check_cuda(cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault), what);
  bytes_ = bytes;
  return ptr_;
}

MappedWords::MappedWords(std::size_t count, const char* what) : count_(count) {
  void* host = nullptr;
  check_cuda(cudaHostAlloc(&host, count * sizeof(std::uint32_t), cudaHostAllocMapped), what);
  host_ = static_cast<std::uint32_t*>(host);
  for (std::size_t i = 0; i < count; ++i) host_[i] = 0;
  void* device = nullptr;
  const cudaError_t e = cudaHostGetDevicePointer(&device, host, 0);
  if (e != cudaSuccess) {
    (void)cudaFreeHost(host);
    check_cuda(e, what);
  }
  device_ = static_cast<std::uint32_t*>(device);
}

MappedWords::~MappedWords() {
  if (host_) (void)cudaFreeHost(host_);
}

Stream::Stream(const char* what) {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), what);
}

Stream::~Stream() {
  if (stream_) (void)cudaStreamDestroy(stream_);
}

Event::Event(const char* what, bool timed) {
  check_cuda(cudaEventCreateWithFlags(&event_, timed ? cudaEventDefault : cudaEventDisableTiming),
             what);
}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(event_);
}

}  // namespace asynctp::cuda
