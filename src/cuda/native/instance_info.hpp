// Internal: what one kernel instantiation (instances/<id>.cu) tells the host
// about itself. Every instance includes this header and nothing of the list
// of instances (instances.hpp), which changes whenever one is added.
#pragma once

#include <cuda_runtime_api.h>

#include "async_input_gemm.hpp"

namespace asynctp::cuda::native::detail {

// group_m: the scheduler's swizzle, already clamped by the caller.
// sm_limit: the grid limit in CTAs, already clamped to the device.
using InstanceLaunchFn = cudaError_t (*)(const NativeGemmArgs& args, int group_m, int sm_limit,
                                         void* workspace, cudaStream_t stream);
using InstanceGridFn = int (*)(const NativeGemmArgs& args, int group_m, int sm_limit);

struct InstanceInfo {
  const char* id;
  KernelSchedule schedule;
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  bool b_col_major;
  int stages;      // mainloop pipeline stages (CUTLASS's auto carve-out)
  int smem_bytes;  // dynamic shared memory per CTA
  InstanceLaunchFn launch;
  InstanceGridFn grid;
};

}  // namespace asynctp::cuda::native::detail
