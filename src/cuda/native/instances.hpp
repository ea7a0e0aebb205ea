// Internal: the kernel instantiations of this build, one per translation unit
// under instances/ (each one CUTLASS kernel: ~90 s and ~3.5 GB to compile).
// No CUTLASS here; async_input_gemm.cpp builds the config table from these.
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

// The instantiations of this build. Adding one: a file instances/<id>.cu
// (copy a sibling, change the parameters) and a line here.
#define ASYNCTP_NATIVE_INSTANCES(X) \
  X(pp_128x128x64_c2x1_brow)        \
  X(pp_128x128x64_c2x1_bcol)        \
  X(coop_256x160x64_c2x1_brow)      \
  X(coop_256x160x64_c2x1_bcol)      \
  X(pp_128x128x64_c1x2_brow)        \
  X(pp_128x128x64_c1x2_bcol)        \
  X(coop_128x256x64_c2x1_brow)      \
  X(coop_128x256x64_c2x1_bcol)      \
  X(pp_64x128x64_c1x2_brow)         \
  X(pp_64x128x64_c1x2_bcol)         \
  X(pp_64x256x64_c1x1_brow)         \
  X(pp_64x256x64_c1x1_bcol)

// The reduce-scatter side's (ChunkSync::release_output): one kernel shape,
// both B layouts, to keep the build short.
#define ASYNCTP_NATIVE_OUTPUT_INSTANCES(X) \
  X(rs_coop_128x256x64_c2x1_brow)          \
  X(rs_coop_128x256x64_c2x1_bcol)

#define ASYNCTP_NATIVE_DECLARE_INSTANCE(id) const InstanceInfo& instance_##id();
ASYNCTP_NATIVE_INSTANCES(ASYNCTP_NATIVE_DECLARE_INSTANCE)
ASYNCTP_NATIVE_OUTPUT_INSTANCES(ASYNCTP_NATIVE_DECLARE_INSTANCE)
#undef ASYNCTP_NATIVE_DECLARE_INSTANCE

}  // namespace asynctp::cuda::native::detail
