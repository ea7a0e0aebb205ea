// The runtime calls behind asynctp/bench.hpp, written once over gpu/runtime.hpp for CUDA and HIP.
#include <cstdio>
#include <utility>

#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "gpu/runtime.hpp"

namespace asynctp::bench {
namespace {

namespace rt = gpu::rt;

rt::StreamHandle handle(void* stream) { return static_cast<rt::StreamHandle>(stream); }
rt::EventHandle handle_of_event(void* event) { return static_cast<rt::EventHandle>(event); }

std::size_t bytes_of(const TensorView& view) {
  return static_cast<std::size_t>(view.numel()) * element_size(view.dtype);
}

}  // namespace

std::string device_name(int device) {
  std::string name;
  gpu::check(rt::device_name(device, &name), "device properties");
  return name;
}

std::size_t free_memory(int device) {
  set_device(device);
  std::size_t free = 0;
  std::size_t total = 0;
  gpu::check(rt::mem_get_info(&free, &total), "device memory info");
  return free;
}

void set_device(int device) { gpu::check(rt::set_device(device), "set device"); }

int current_device() {
  int device = 0;
#if defined(ASYNCTP_GPU_HIP)
  gpu::check(hipGetDevice(&device), "get device");
#else
  gpu::check(cudaGetDevice(&device), "get device");
#endif
  return device;
}

Stream::Stream() {
  rt::StreamHandle stream = nullptr;
  gpu::check(rt::stream_create_non_blocking(&stream), "stream create");
  stream_ = stream;
}

// Destructors cannot throw: a failing release (the runtime already torn
// down at exit) has nothing left to free.
Stream::~Stream() { (void)rt::stream_destroy(handle(stream_)); }

void Stream::synchronize() const {
  gpu::check(rt::stream_synchronize(handle(stream_)), "stream synchronize");
}

DeviceTensor::DeviceTensor(const TensorView& host, int device, std::string what)
    : view_(host), what_(std::move(what)) {
  if (!host.is_row_major() && !host.is_col_major()) {
    throw Error(ErrorCode::invalid_argument, what_ + ": a device copy needs a dense host tensor");
  }
  char size[48];
  std::snprintf(size, sizeof size, " (%.2f GiB)", static_cast<double>(bytes_of(host)) / (1 << 30));
  view_.data = nullptr;
  view_.device = {rt::kDeviceKind, device};
  gpu::check(rt::device_malloc(&view_.data, bytes_of(host) == 0 ? 1 : bytes_of(host)),
             ("device allocation of " + what_ + size).c_str());
}

DeviceTensor::~DeviceTensor() {
  if (view_.data != nullptr) (void)rt::device_free(view_.data);
}

void DeviceTensor::upload(const TensorView& host, void* stream) {
  gpu::check(rt::memcpy_async(view_.data, host.data, bytes_of(view_), rt::Copy::host_to_device,
                              handle(stream)),
             ("copying " + what_ + " to the device").c_str());
}

void DeviceTensor::download(const TensorView& host, void* stream) const {
  gpu::check(rt::memcpy_async(host.data, view_.data, bytes_of(view_), rt::Copy::device_to_host,
                              handle(stream)),
             ("copying " + what_ + " from the device").c_str());
}

Event::Event() {
  rt::EventHandle event = nullptr;
  gpu::check(rt::event_create(&event, /*timed=*/true), "event create");
  event_ = event;
}

Event::~Event() { (void)rt::event_destroy(handle_of_event(event_)); }

void Event::record(void* stream) {
  gpu::check(rt::event_record(handle_of_event(event_), handle(stream)), "event record");
}

void Event::synchronize() const {
  gpu::check(rt::event_synchronize(handle_of_event(event_)), "event synchronize");
}

double Event::ms_since(const Event& begin) const {
  float ms = 0;
  gpu::check(rt::event_elapsed_ms(&ms, handle_of_event(begin.event_), handle_of_event(event_)),
             "event elapsed time");
  return ms;
}

DeviceRank::DeviceRank(const verify::RankTensors& host, int device, const std::string& who)
    : host_(host), views_(host) {
  const auto copy = [&](const std::vector<verify::RankTensors::Named>& from,
                        std::vector<verify::RankTensors::Named>& to,
                        std::vector<std::unique_ptr<DeviceTensor>>& made) {
    for (std::size_t i = 0; i < from.size(); ++i) {
      made.push_back(std::make_unique<DeviceTensor>(from[i].view, device, who + from[i].name));
      to[i].view = made.back()->view();
    }
  };
  copy(host.inputs, views_.inputs, inputs_);
  copy(host.outputs, views_.outputs, outputs_);
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    inputs_[i]->upload(host_.inputs[i].view, stream_.get());
  }
  stream_.synchronize();
}

void DeviceRank::upload_outputs() {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    outputs_[i]->upload(host_.outputs[i].view, stream_.get());
  }
  stream_.synchronize();
}

void DeviceRank::download_outputs() {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    outputs_[i]->download(host_.outputs[i].view, stream_.get());
  }
  stream_.synchronize();
}

}  // namespace asynctp::bench
