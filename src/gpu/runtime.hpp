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

#if defined(ASYNCTP_GPU_HIP)
#include <hip/hip_runtime_api.h>
#else
#include <cuda_runtime_api.h>
#endif

namespace asynctp::gpu::rt {

#if defined(ASYNCTP_GPU_HIP)
using Status = hipError_t;
using StreamHandle = hipStream_t;
using EventHandle = hipEvent_t;
inline constexpr Status kSuccess = hipSuccess;
inline constexpr Status kNotReady = hipErrorNotReady;
inline constexpr const char* kName = "HIP";
// HIP runs small copies as kernels; the producer keeps each copy to whole
// rows of at most 1 MiB (src/hip/deadlock_rules.hpp, kMaxCopyPieceBytes).
inline constexpr std::size_t kMaxCopyBytes = std::size_t{1} << 20;
#else
using Status = cudaError_t;
using StreamHandle = cudaStream_t;
using EventHandle = cudaEvent_t;
inline constexpr Status kSuccess = cudaSuccess;
inline constexpr Status kNotReady = cudaErrorNotReady;
inline constexpr const char* kName = "CUDA";
// No limit: a CUDA copy is one operation however large.
inline constexpr std::size_t kMaxCopyBytes = std::numeric_limits<std::size_t>::max();
#endif

enum class Copy { device_to_device, device_to_host, host_to_device, any };

// What a pointer points to, as the runtime knows it.
enum class MemoryKind { device, managed, pinned_host, unregistered_host };

#if defined(ASYNCTP_GPU_HIP)
inline hipMemcpyKind kind_of(Copy c) {
  switch (c) {
    case Copy::device_to_device:
      return hipMemcpyDeviceToDevice;
    case Copy::device_to_host:
      return hipMemcpyDeviceToHost;
    case Copy::host_to_device:
      return hipMemcpyHostToDevice;
    case Copy::any:
      break;
  }
  return hipMemcpyDefault;
}
inline const char* error_name(Status s) { return hipGetErrorName(s); }
inline const char* error_string(Status s) { return hipGetErrorString(s); }
inline void clear_last_error() { (void)hipGetLastError(); }
inline Status set_device(int device) { return hipSetDevice(device); }
inline Status device_malloc(void** p, std::size_t bytes) { return hipMalloc(p, bytes); }
inline Status device_free(void* p) { return hipFree(p); }
inline Status device_memset(void* p, int value, std::size_t bytes) {
  return hipMemset(p, value, bytes);
}
inline Status host_alloc_pinned(void** p, std::size_t bytes) {
  return hipHostMalloc(p, bytes, hipHostMallocDefault);
}
inline Status host_alloc_mapped(void** p, std::size_t bytes) {
  return hipHostMalloc(p, bytes, hipHostMallocMapped);
}
inline Status host_device_pointer(void** device, void* host) {
  return hipHostGetDevicePointer(device, host, 0);
}
inline Status host_free(void* p) { return hipHostFree(p); }
inline Status stream_create_non_blocking(StreamHandle* s) {
  return hipStreamCreateWithFlags(s, hipStreamNonBlocking);
}
inline Status stream_destroy(StreamHandle s) { return hipStreamDestroy(s); }
inline Status stream_synchronize(StreamHandle s) { return hipStreamSynchronize(s); }
inline Status stream_wait_event(StreamHandle s, EventHandle e) {
  return hipStreamWaitEvent(s, e, 0);
}
inline Status event_create(EventHandle* e, bool timed) {
  return hipEventCreateWithFlags(e, timed ? hipEventDefault : hipEventDisableTiming);
}
inline Status event_destroy(EventHandle e) { return hipEventDestroy(e); }
inline Status event_record(EventHandle e, StreamHandle s) { return hipEventRecord(e, s); }
inline Status event_query(EventHandle e) { return hipEventQuery(e); }
inline Status event_elapsed_ms(float* ms, EventHandle begin, EventHandle end) {
  return hipEventElapsedTime(ms, begin, end);
}
inline Status memcpy_async(void* dst, const void* src, std::size_t bytes, Copy kind,
                           StreamHandle s) {
  return hipMemcpyAsync(dst, src, bytes, kind_of(kind), s);
}
inline Status memset_async(void* p, int value, std::size_t bytes, StreamHandle s) {
  return hipMemsetAsync(p, value, bytes, s);
}
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
inline Status stream_capturing(StreamHandle s, bool* capturing) {
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  const Status e = hipStreamIsCapturing(s, &status);
  *capturing = status == hipStreamCaptureStatusActive;
  return e;
}
#else
inline cudaMemcpyKind kind_of(Copy c) {
  switch (c) {
    case Copy::device_to_device:
      return cudaMemcpyDeviceToDevice;
    case Copy::device_to_host:
      return cudaMemcpyDeviceToHost;
    case Copy::host_to_device:
      return cudaMemcpyHostToDevice;
    case Copy::any:
      break;
  }
  return cudaMemcpyDefault;
}
inline const char* error_name(Status s) { return cudaGetErrorName(s); }
inline const char* error_string(Status s) { return cudaGetErrorString(s); }
inline void clear_last_error() { (void)cudaGetLastError(); }
inline Status set_device(int device) { return cudaSetDevice(device); }
inline Status device_malloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
inline Status device_free(void* p) { return cudaFree(p); }
inline Status device_memset(void* p, int value, std::size_t bytes) {
  return cudaMemset(p, value, bytes);
}
inline Status host_alloc_pinned(void** p, std::size_t bytes) {
  return cudaHostAlloc(p, bytes, cudaHostAllocDefault);
}
inline Status host_alloc_mapped(void** p, std::size_t bytes) {
  return cudaHostAlloc(p, bytes, cudaHostAllocMapped);
}
inline Status host_device_pointer(void** device, void* host) {
  return cudaHostGetDevicePointer(device, host, 0);
}
inline Status host_free(void* p) { return cudaFreeHost(p); }
inline Status stream_create_non_blocking(StreamHandle* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
}
inline Status stream_destroy(StreamHandle s) { return cudaStreamDestroy(s); }
inline Status stream_synchronize(StreamHandle s) { return cudaStreamSynchronize(s); }
inline Status stream_wait_event(StreamHandle s, EventHandle e) {
  return cudaStreamWaitEvent(s, e, 0);
}
inline Status event_create(EventHandle* e, bool timed) {
  return cudaEventCreateWithFlags(e, timed ? cudaEventDefault : cudaEventDisableTiming);
}
inline Status event_destroy(EventHandle e) { return cudaEventDestroy(e); }
inline Status event_record(EventHandle e, StreamHandle s) { return cudaEventRecord(e, s); }
inline Status event_query(EventHandle e) { return cudaEventQuery(e); }
inline Status event_elapsed_ms(float* ms, EventHandle begin, EventHandle end) {
  return cudaEventElapsedTime(ms, begin, end);
}
inline Status memcpy_async(void* dst, const void* src, std::size_t bytes, Copy kind,
                           StreamHandle s) {
  return cudaMemcpyAsync(dst, src, bytes, kind_of(kind), s);
}
inline Status memset_async(void* p, int value, std::size_t bytes, StreamHandle s) {
  return cudaMemsetAsync(p, value, bytes, s);
}
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
inline Status stream_capturing(StreamHandle s, bool* capturing) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const Status e = cudaStreamIsCapturing(s, &status);
  *capturing = status == cudaStreamCaptureStatusActive;
  return e;
}
#endif

}  // namespace asynctp::gpu::rt
