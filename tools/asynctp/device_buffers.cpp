#include "device_buffers.hpp"

#include <cstdio>
#include <utility>

#include "asynctp/error.hpp"

namespace asynctp::tool {

namespace rt = gpu::rt;

void device_check(rt::Status status, const std::string& what) {
  if (status != rt::kSuccess) {
    const std::string text = rt::error_string(status);
    rt::clear_last_error();
    throw Error(ErrorCode::backend, what + ": " + text);
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
  const rt::Status status = rt::device_malloc(&data_, bytes == 0 ? 1 : bytes);
  if (status != rt::kSuccess) {
    data_ = nullptr;
    char size[64];
    std::snprintf(size, sizeof size, " (%.2f GiB)", static_cast<double>(bytes) / (1 << 30));
    device_check(status, "device allocation of " + what + size);
  }
}

// Destructors cannot throw: a failing free (the context already torn
// down at exit) has nothing left to release.
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)rt::device_free(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)rt::device_free(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, rt::StreamHandle stream, const std::string& what) {
  device_check(rt::memcpy_async(data_, host, bytes_, rt::Copy::host_to_device, stream),
               "copying " + what + " to the device");
}

void DeviceBuffer::download(void* host, rt::StreamHandle stream, const std::string& what) const {
  device_check(rt::memcpy_async(host, data_, bytes_, rt::Copy::device_to_host, stream),
               "copying " + what + " from the device");
}

Stream::Stream() { device_check(rt::stream_create_non_blocking(&stream_), "stream create"); }

Stream::~Stream() {
  if (stream_ != nullptr) (void)rt::stream_destroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) (void)rt::stream_destroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Event::Event() { device_check(rt::event_create(&event_, /*timed=*/true), "event create"); }

Event::~Event() {
  if (event_ != nullptr) (void)rt::event_destroy(event_);
}

void Event::record(rt::StreamHandle stream) {
  device_check(rt::event_record(event_, stream), "event record");
}

void Event::wait() const { device_check(rt::event_synchronize(event_), "event synchronize"); }

float Event::ms_since(const Event& begin) const {
  float ms = 0;
  device_check(rt::event_elapsed_ms(&ms, begin.event_, event_), "event elapsed time");
  return ms;
}

}  // namespace asynctp::tool
