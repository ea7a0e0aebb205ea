// RAII owners of the GPU objects the CLI makes (device memory, streams,
// events) and the one place a runtime status becomes an asynctp::Error, for
// the runtime the library was built for (CUDA, or HIP in a ROCm build,
// through gpu/runtime.hpp). Only the GPU-built files include this.
#pragma once

#include <cstddef>
#include <string>

#include "gpu/runtime.hpp"

namespace asynctp::tool {

// Throws Error(backend) "<what>: <the runtime's error string>" unless status
// is success.
void device_check(gpu::rt::Status status, const std::string& what);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws Error(backend) naming `what` and the size when the allocation fails.
  DeviceBuffer(std::size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  // Stream-ordered copies of the whole buffer; the caller synchronizes.
  void upload(const void* host, gpu::rt::StreamHandle stream, const std::string& what);
  void download(void* host, gpu::rt::StreamHandle stream, const std::string& what) const;

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
  gpu::rt::StreamHandle get() const noexcept { return stream_; }

 private:
  gpu::rt::StreamHandle stream_ = nullptr;
};

// A timing event (elapsed time between two of them).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  gpu::rt::EventHandle get() const noexcept { return event_; }
  void record(gpu::rt::StreamHandle stream);
  // Blocks until the event has completed.
  void wait() const;
  // Milliseconds from `begin` to this event; both must have completed.
  float ms_since(const Event& begin) const;

 private:
  gpu::rt::EventHandle event_ = nullptr;
};

}  // namespace asynctp::tool
