#include <nccl_device.h>

#include "cuda/nccl/device_kernels.hpp"
#include "cuda/nccl/system_scope.cuh"

namespace asynctp::nccl {
namespace {

__global__ void peer_pointers_kernel(ncclWindow_t window, int world, void** out) {
  for (int p = static_cast<int>(threadIdx.x); p < world; p += static_cast<int>(blockDim.x)) {
    out[p] = ncclGetPeerPointer(window, 0, p);
  }
}

__global__ void barrier_kernel(BarrierArgs args) {
  __shared__ std::uint32_t target;
  if (threadIdx.x == 0) target = *args.generation + 1u;
  __syncthreads();
  const std::uint32_t g = target;
  const int step = static_cast<int>(blockDim.x);
  for (int p = static_cast<int>(threadIdx.x); p < args.world; p += step) {
    store_release_sys(args.peer_sync_areas[p] + args.rank, g);
  }
  for (int p = static_cast<int>(threadIdx.x); p < args.world; p += step) {
    const std::uint64_t start = globaltimer_ns();
    std::uint32_t backoff = 32;
    while (true) {
      const std::uint32_t seen = load_acquire_sys(args.my_sync_area + p);
      if (static_cast<std::int32_t>(seen - g) >= 0) break;
      if (globaltimer_ns() - start > args.timeout_ns) {
        if (atomicCAS(args.error_words, 0u, static_cast<std::uint32_t>(p) + 1u) == 0u) {
          atomicExch(args.error_words + 1, seen);
          atomicExch(args.error_words + 2, g);
        }
        break;
      }
      __nanosleep(backoff);
      backoff = backoff < 1024u ? backoff * 2u : 1024u;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *args.generation = g;
}

}  // namespace

gpu::rt::Status enqueue_peer_pointers(ncclWindow_t window, int world, void** out_device,
                                      gpu::rt::StreamHandle stream) {
  peer_pointers_kernel<<<1, 64, 0, stream>>>(window, world, out_device);
  return cudaGetLastError();
}

gpu::rt::Status enqueue_barrier(const BarrierArgs& args, gpu::rt::StreamHandle stream) {
  barrier_kernel<<<1, 64, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace asynctp::nccl
