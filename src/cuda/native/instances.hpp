// Internal: the kernel instantiations of this build, one per translation unit
// under instances/ (each one CUTLASS kernel: ~90 s and ~3.5 GB to compile).
// No CUTLASS here; async_input_gemm.cpp builds the config table from these.
// The instances themselves include only instance_info.hpp, so that a line
// added or removed here rebuilds this list's readers, not every kernel.
#pragma once

#include "instance_info.hpp"

namespace asynctp::cuda::native::detail {

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
