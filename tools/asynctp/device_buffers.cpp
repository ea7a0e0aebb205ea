#include "device_buffers.hpp"

#include <cstdio>
#include <utility>

#include "asynctp/error.hpp"

namespace asynctp::tool {

void cuda_check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) {
    throw Error(ErrorCode::backend, what + ": " + cudaGetErrorString(status));
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
  const cudaError_t status = cudaMalloc(&data_, bytes == 0 ? 1 : bytes);
  if (status != cudaSuccess) {
    data_ = nullptr;
    char size[64];
    std::snprintf(size, sizeof size, " (%.2f GiB)", static_cast<double>(bytes) / (1 << 30));
    cuda_check(status, "cudaMalloc of " + what + size);
  }
}

// Destructors cannot throw: a failing cudaFree (the context already torn
// down at exit) has nothing left to release.
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, cudaStream_t stream, const std::string& what) {
  cuda_check(cudaMemcpyAsync(data_, host, bytes_, cudaMemcpyHostToDevice, stream),
             "copying " + what + " to the device");
}

void DeviceBuffer::download(void* host, cudaStream_t stream, const std::string& what) const {
  cuda_check(cudaMemcpyAsync(host, data_, bytes_, cudaMemcpyDeviceToHost, stream),
             "copying " + what + " from the device");
}

Stream::Stream() {
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

Stream::~Stream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Event::Event() { cuda_check(cudaEventCreate(&event_), "cudaEventCreate"); }

Event::~Event() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) {
  cuda_check(cudaEventRecord(event_, stream), "cudaEventRecord");
}

void Event::wait() const { cuda_check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

float Event::ms_since(const Event& begin) const {
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, begin.event_, event_), "cudaEventElapsedTime");
  return ms;
}

}  // namespace asynctp::tool
