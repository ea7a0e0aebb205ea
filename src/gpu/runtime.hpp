// The GPU runtime layer: the few runtime calls the host orchestration makes
// (memory, streams, events, copies), named once for both runtimes. The same
// orchestration source compiles against CUDA (the default) and, with
// ASYNCTP_GPU_HIP defined, against HIP; nothing above this header names
// cuda* or hip* functions. (Stream memory operations, whose entry points
// differ more, are declared in gpu/stream_memops.hpp and implemented once per
// runtime.)
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "asynctp/tensor.hpp"

#if defined(ASYNCTP_GPU_HIP)
#include <hip/hip_runtime_api.h>
#else
#include <cuda_runtime_api.h>
#endif

// The two runtimes name the same calls with another prefix (cudaMalloc,
// hipMalloc): every wrapper below is written once through ASYNCTP_RT; only
// where they differ in more than the prefix (pinned host allocation, pointer
// attributes) is there a branch per runtime.
#if defined(ASYNCTP_GPU_HIP)
#define ASYNCTP_RT(name) hip##name
#else
#define ASYNCTP_RT(name) cuda##name
#endif

namespace asynctp::gpu::rt {

using Status = ASYNCTP_RT(Error_t);
using StreamHandle = ASYNCTP_RT(Stream_t);
using EventHandle = ASYNCTP_RT(Event_t);
inline constexpr Status kSuccess = ASYNCTP_RT(Success);
inline constexpr Status kNotReady = ASYNCTP_RT(ErrorNotReady);
inline constexpr Status kInvalidValue = ASYNCTP_RT(ErrorInvalidValue);
#if defined(ASYNCTP_GPU_HIP)
inline constexpr const char* kName = "HIP";
inline constexpr const char* kBackendName = "hip";  // as users name the backend
inline constexpr DeviceKind kDeviceKind = DeviceKind::hip;
// HIP runs small copies as kernels; the producer keeps each copy to whole
// rows of at most 1 MiB (src/hip/deadlock_rules.hpp, kMaxCopyPieceBytes).
inline constexpr std::size_t kMaxCopyBytes = std::size_t{1} << 20;
#else
inline constexpr const char* kName = "CUDA";
inline constexpr const char* kBackendName = "cuda";
inline constexpr DeviceKind kDeviceKind = DeviceKind::cuda;
// No limit: a CUDA copy is one operation however large.
inline constexpr std::size_t kMaxCopyBytes = std::numeric_limits<std::size_t>::max();
#endif

enum class Copy { device_to_device, device_to_host, host_to_device, any };

// What a pointer points to, as the runtime knows it.
enum class MemoryKind { device, managed, pinned_host, unregistered_host };

inline ASYNCTP_RT(MemcpyKind) kind_of(Copy c) {
  switch (c) {
    case Copy::device_to_device:
      return ASYNCTP_RT(MemcpyDeviceToDevice);
    case Copy::device_to_host:
      return ASYNCTP_RT(MemcpyDeviceToHost);
    case Copy::host_to_device:
      return ASYNCTP_RT(MemcpyHostToDevice);
    case Copy::any:
      break;
  }
  return ASYNCTP_RT(MemcpyDefault);
}
inline const char* error_name(Status s) { return ASYNCTP_RT(GetErrorName)(s); }
inline const char* error_string(Status s) { return ASYNCTP_RT(GetErrorString)(s); }
inline void clear_last_error() { (void)ASYNCTP_RT(GetLastError)(); }
// The error of the last launch (and clears it): a kernel launch's status.
inline Status last_error() { return ASYNCTP_RT(GetLastError)(); }
inline Status set_device(int device) { return ASYNCTP_RT(SetDevice)(device); }
inline Status device_count(int* count) { return ASYNCTP_RT(GetDeviceCount)(count); }
inline Status get_device(int* device) { return ASYNCTP_RT(GetDevice)(device); }
// Streaming multiprocessors (CUDA) or compute units (HIP).
inline Status sm_count(int device, int* count) {
#if defined(ASYNCTP_GPU_HIP)
  return hipDeviceGetAttribute(count, hipDeviceAttributeMultiprocessorCount, device);
#else
  return cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device);
#endif
}
inline Status device_synchronize() { return ASYNCTP_RT(DeviceSynchronize)(); }
inline Status mem_get_info(std::size_t* free, std::size_t* total) {
  return ASYNCTP_RT(MemGetInfo)(free, total);
}
#if defined(ASYNCTP_GPU_HIP)
using DeviceProperties = hipDeviceProp_t;
#else
using DeviceProperties = cudaDeviceProp;
#endif
inline Status device_name(int device, std::string* name) {
  DeviceProperties props{};
  const Status s = ASYNCTP_RT(GetDeviceProperties)(&props, device);
  if (s == kSuccess) *name = props.name;
  return s;
}
// The device's 16-byte UUID (two ranks on one GPU are told apart by it).
inline Status device_uuid(int device, unsigned char uuid[16]) {
#if defined(ASYNCTP_GPU_HIP)
  hipUUID id{};
  const Status s = hipDeviceGetUuid(&id, device);
  const char* bytes = id.bytes;
#else
  DeviceProperties props{};
  const Status s = cudaGetDeviceProperties(&props, device);
  const char* bytes = props.uuid.bytes;
#endif
  if (s == kSuccess) {
    for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(bytes[i]);
  }
  return s;
}
inline Status device_malloc(void** p, std::size_t bytes) { return ASYNCTP_RT(Malloc)(p, bytes); }
inline Status device_free(void* p) { return ASYNCTP_RT(Free)(p); }
inline Status device_memset(void* p, int value, std::size_t bytes) {
  return ASYNCTP_RT(Memset)(p, value, bytes);
}
// Pinned host memory: the one allocator whose names differ beyond the prefix.
#if defined(ASYNCTP_GPU_HIP)
#define ASYNCTP_RT_HOST_ALLOC(flag) hipHostMalloc(p, bytes, hipHostMalloc##flag)
#define ASYNCTP_RT_HOST_FREE hipHostFree
#else
#define ASYNCTP_RT_HOST_ALLOC(flag) cudaHostAlloc(p, bytes, cudaHostAlloc##flag)
#define ASYNCTP_RT_HOST_FREE cudaFreeHost
#endif
inline Status host_alloc_pinned(void** p, std::size_t bytes) {
  return ASYNCTP_RT_HOST_ALLOC(Default);
}
inline Status host_alloc_mapped(void** p, std::size_t bytes) {
  return ASYNCTP_RT_HOST_ALLOC(Mapped);
}
// Mapped, and pinned for every GPU's context (a word the streams of several
// GPUs wait on; with unified addressing the host address is the device one).
inline Status host_alloc_mapped_portable(void** p, std::size_t bytes) {
#if defined(ASYNCTP_GPU_HIP)
  return hipHostMalloc(p, bytes, hipHostMallocMapped | hipHostMallocPortable);
#else
  return cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
#endif
}
inline Status host_free(void* p) { return ASYNCTP_RT_HOST_FREE(p); }
#undef ASYNCTP_RT_HOST_ALLOC
#undef ASYNCTP_RT_HOST_FREE
inline Status host_device_pointer(void** device, void* host) {
  return ASYNCTP_RT(HostGetDevicePointer)(device, host, 0);
}
inline Status stream_create_non_blocking(StreamHandle* s) {
  return ASYNCTP_RT(StreamCreateWithFlags)(s, ASYNCTP_RT(StreamNonBlocking));
}
inline Status stream_destroy(StreamHandle s) { return ASYNCTP_RT(StreamDestroy)(s); }
inline Status stream_synchronize(StreamHandle s) { return ASYNCTP_RT(StreamSynchronize)(s); }
inline Status stream_wait_event(StreamHandle s, EventHandle e) {
  return ASYNCTP_RT(StreamWaitEvent)(s, e, 0);
}
inline Status event_create(EventHandle* e, bool timed) {
  return ASYNCTP_RT(EventCreateWithFlags)(
      e, timed ? ASYNCTP_RT(EventDefault) : ASYNCTP_RT(EventDisableTiming));
}
inline Status event_destroy(EventHandle e) { return ASYNCTP_RT(EventDestroy)(e); }
inline Status event_record(EventHandle e, StreamHandle s) { return ASYNCTP_RT(EventRecord)(e, s); }
inline Status event_query(EventHandle e) { return ASYNCTP_RT(EventQuery)(e); }
inline Status event_synchronize(EventHandle e) { return ASYNCTP_RT(EventSynchronize)(e); }
inline Status event_elapsed_ms(float* ms, EventHandle begin, EventHandle end) {
  return ASYNCTP_RT(EventElapsedTime)(ms, begin, end);
}
inline Status memcpy_async(void* dst, const void* src, std::size_t bytes, Copy kind,
                           StreamHandle s) {
  return ASYNCTP_RT(MemcpyAsync)(dst, src, bytes, kind_of(kind), s);
}
// Blocking: returns once the bytes are copied (a traced call's tile stamps,
// read back after the call has completed).
inline Status memcpy_blocking(void* dst, const void* src, std::size_t bytes, Copy kind) {
  return ASYNCTP_RT(Memcpy)(dst, src, bytes, kind_of(kind));
}
inline Status memset_async(void* p, int value, std::size_t bytes, StreamHandle s) {
  return ASYNCTP_RT(MemsetAsync)(p, value, bytes, s);
}
inline Status stream_capturing(StreamHandle s, bool* capturing) {
  ASYNCTP_RT(StreamCaptureStatus) status = ASYNCTP_RT(StreamCaptureStatusNone);
  const Status e = ASYNCTP_RT(StreamIsCapturing)(s, &status);
  *capturing = status == ASYNCTP_RT(StreamCaptureStatusActive);
  return e;
}
#if defined(ASYNCTP_GPU_HIP)
inline Status pointer_info(const void* p, MemoryKind* kind, int* device) {
  hipPointerAttribute_t a{};
  const Status s = hipPointerGetAttributes(&a, p);
  if (s == hipErrorInvalidValue) {  // HIP's answer for memory it never registered
    (void)hipGetLastError();
    *kind = MemoryKind::unregistered_host;
    *device = -1;
    return hipSuccess;
  }
  if (s != hipSuccess) return s;
  *kind = a.isManaged                           ? MemoryKind::managed
          : a.memoryType == hipMemoryTypeDevice ? MemoryKind::device
                                                : MemoryKind::pinned_host;
  *device = a.device;
  return s;
}
#else
inline Status pointer_info(const void* p, MemoryKind* kind, int* device) {
  cudaPointerAttributes a{};
  const Status s = cudaPointerGetAttributes(&a, p);
  if (s != cudaSuccess) return s;
  switch (a.type) {
    case cudaMemoryTypeDevice:
      *kind = MemoryKind::device;
      break;
    case cudaMemoryTypeManaged:
      *kind = MemoryKind::managed;
      break;
    case cudaMemoryTypeHost:
      *kind = MemoryKind::pinned_host;
      break;
    default:
      *kind = MemoryKind::unregistered_host;
      break;
  }
  *device = a.device;
  return s;
}
#endif

}  // namespace asynctp::gpu::rt

#undef ASYNCTP_RT
