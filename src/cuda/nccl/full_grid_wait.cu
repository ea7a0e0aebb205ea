#include "cuda/nccl/full_grid_wait.hpp"
#include "cuda/nccl/system_scope.cuh"

namespace asynctp::nccl {
namespace {

// 8 blocks of 256 threads per SM take every thread slot of an sm_80/sm_90
// SM (2048); the bound keeps registers at 32 per thread so that they fit.
__global__ void __launch_bounds__(kFullGridBlockThreads, 8)
    full_grid_wait_kernel(FullGridWords* words, const std::uint32_t* flag, std::uint32_t epoch,
                          std::uint64_t timeout_ns) {
  if (threadIdx.x == 0) {
    const std::uint32_t order = atomicAdd(&words->arrived, 1u);
    std::uint64_t start = globaltimer_ns();
    while (load_acquire_sys(&words->arrived) < gridDim.x) {
      if (globaltimer_ns() - start > timeout_ns) {
        atomicAdd(&words->not_resident, 1u);
        break;
      }
      __nanosleep(256);
    }
    if (order == gridDim.x - 1) {
      words->ready_ns = globaltimer_ns();
      store_release_sys(&words->ready, epoch);
    }
    start = globaltimer_ns();
    while (load_acquire_sys(flag) != epoch) {
      if (globaltimer_ns() - start > timeout_ns) {
        atomicAdd(&words->flag_timeouts, 1u);
        break;
      }
      __nanosleep(256);
    }
    if (load_acquire_sys(flag) == epoch) {
      atomicMin(reinterpret_cast<unsigned long long*>(&words->first_flag_ns),
                static_cast<unsigned long long>(globaltimer_ns()));
    }
  }
  // The other threads hold their slots until thread 0 is done.
  __syncthreads();
}

}  // namespace

int full_grid_blocks_per_sm(int device, const char** why) {
  int threads_per_sm = 0, resident = 0;
  if (cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, full_grid_wait_kernel,
                                                    kFullGridBlockThreads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    *why = "cannot query the device's threads per SM or the probe kernel's occupancy";
    return 0;
  }
  const int needed = threads_per_sm / kFullGridBlockThreads;
  if (needed < 1 || threads_per_sm % kFullGridBlockThreads != 0 || resident < needed) {
    *why = "the probe kernel cannot take every thread slot of an SM on this device";
    return 0;
  }
  return needed;
}

cudaError_t launch_full_grid_wait(FullGridWords* words, const std::uint32_t* flag,
                                  std::uint32_t epoch, std::uint64_t timeout_ns, int blocks,
                                  cudaStream_t stream) {
  full_grid_wait_kernel<<<blocks, kFullGridBlockThreads, 0, stream>>>(words, flag, epoch,
                                                                      timeout_ns);
  return cudaGetLastError();
}

}  // namespace asynctp::nccl
