// RAII owners of the CUDA objects the CLI makes (device memory, streams,
// events) and the one place a CUDA status becomes an asynctp::Error. Only
// the CUDA-built files include this (it needs the CUDA runtime headers).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace asynctp::tool {

// Throws Error(backend) "<what>: <CUDA's error string>" unless status is
// cudaSuccess.
void cuda_check(cudaError_t status, const std::string& what);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws Error(backend) naming `what` and the size when cudaMalloc fails.
  DeviceBuffer(std::size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  // Stream-ordered copies of the whole buffer; the caller synchronizes.
  void upload(const void* host, cudaStream_t stream, const std::string& what);
  void download(void* host, cudaStream_t stream, const std::string& what) const;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-blocking stream: it never waits for the legacy default stream, so
// one rank's work is ordered only by what the library orders it after.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// A timing event (cudaEventElapsedTime between two of them).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream);
  // Blocks until the event has completed.
  void wait() const;
  // Milliseconds from `begin` to this event; both must have completed.
  float ms_since(const Event& begin) const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace asynctp::tool
