#include "gpu/device_checks.hpp"

#include "asynctp/error.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {
namespace {

[[noreturn]] void fail(const char* name, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, std::string(name) + ": " + rule);
}

}  // namespace

std::string device_unavailable_reason(int device) {
  int count = 0;
  const rt::Status e = rt::device_count(&count);
  if (e != rt::kSuccess) {
    rt::clear_last_error();
    return std::string("no usable ") + rt::kName + " driver or device (" + rt::kBackendName +
           "GetDeviceCount: " + rt::error_name(e) + ")";
  }
  if (device < 0 || device >= count) {
    return std::string("no ") + rt::kName + " device " + std::to_string(device) + " (" +
           std::to_string(count) + " present)";
  }
  return "";
}

void check_on_device(const char* name, const TensorView& t, int device) {
  const std::string runtime = rt::kName;
  if (t.device.index != device) {
    fail(name, "must live on " + runtime + " device " + std::to_string(device) +
                   " (this rank's device), got device " + std::to_string(t.device.index));
  }
  rt::MemoryKind kind = rt::MemoryKind::unregistered_host;
  int owner = -1;
  const rt::Status e = rt::pointer_info(t.data, &kind, &owner);
  if (e != rt::kSuccess) {
    rt::clear_last_error();
    fail(name,
         "is not a pointer " + runtime + " knows (pointer attributes: " + rt::error_name(e) + ")");
  }
  if (kind != rt::MemoryKind::device && kind != rt::MemoryKind::managed) {
    fail(name, "must point to device memory (device allocation or managed); got " +
                   std::string(kind == rt::MemoryKind::pinned_host ? "pinned host"
                                                                   : "unregistered host") +
                   " memory");
  }
  if (owner != device) {
    fail(name, "points to memory of " + runtime + " device " + std::to_string(owner) +
                   ", not this rank's device " + std::to_string(device));
  }
}

bool stream_is_capturing(rt::StreamHandle stream) {
  bool capturing = false;
  check(rt::stream_capturing(stream, &capturing), "stream capture status (options.stream)");
  return capturing;
}

}  // namespace asynctp::gpu
