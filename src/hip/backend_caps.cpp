#include "hip/backend_caps.hpp"

#include <string>

#include "hip/device_topology.hpp"
#include "hip/mfma_layout.hpp"
#include "hip/native_rules.hpp"

namespace asynctp::hip {
namespace {

// The deadlock rule the native grid follows, as the plan's reason states it.
std::string grid_note(const std::string& gfx, int cus) {
  const int engines = shader_engines(gfx, cus).value_or(0);
  return "persistent grid of " + std::to_string(native_grid(gfx, cus).value_or(0)) +
         " workgroups on " + std::to_string(cus) + " CUs: one CU per shader engine (" +
         std::to_string(engines) +
         ") left out, since HIP runs peer copies and signal writes as kernels";
}

}  // namespace

core::BackendCaps hip_caps(const HipDeviceFacts& device, const core::ProblemDesc& problem) {
  const std::string gfx = gfx_target(device.gcn_arch_name);
  core::BackendCaps caps;
  caps.name = "hip " + (gfx.empty() ? std::string("(unnamed device)") : gfx);
  caps.default_tile_m = layout::BlockTile::m;
  caps.default_tile_n = layout::BlockTile::n;
  if (problem.op == core::OpKind::matmul_reduce_scatter) {
    // Pipelined and decomposed run the op here (library GEMMs, then the
    // reduction kernel of gpu/partial_kernels.cu, compiled for HIP too). A
    // native one would take: the MFMA kernel (kernel/async_input_gemm_gfx9)
    // walking its output tiles in send order (core::send_order: the farthest
    // rank's chunk first, its own last) instead of waiting on input chunks;
    // a tile counter per chunk that the workgroup storing a chunk's last tile
    // brings to zero, then makes its stores visible at system scope
    // (__threadfence_system) and stores the chunk's flag with release
    // semantics; a producer that ships each finished chunk to its owner
    // (hipStreamWaitValue32 on the flag, then the copy) while the grid runs,
    // which on AMD needs the CU per shader engine the all-gather's grid
    // already leaves free (hip/deadlock_rules: HIP runs such copies and
    // waits as kernels) or SDMA copy engines; and these facts offering it,
    // with its efficiency measured on an MI300.
    caps.native_unsupported_reason =
        "the native reduce-scatter kernel (a tile-completion signal in the MFMA kernel's "
        "epilogue) is not built yet";
  } else if (const auto why = native_blocker(device.gcn_arch_name, problem.world_size, problem.m,
                                             problem.n, problem.k)) {
    caps.native_unsupported_reason = *why;
  } else if (!native_grid(gfx, device.compute_units)) {
    caps.native_unsupported_reason = "no persistent-grid rule for " +
                                     std::to_string(device.compute_units) + " CUs of " + gfx +
                                     " (not a whole number of XCDs)";
  } else {
    caps.native_supported = true;
    caps.native_note = grid_note(gfx, device.compute_units);
  }
  if (const auto why = queue_blocker(kNativeCallStreams, device.hardware_queues)) {
    caps.no_overlap_reason = *why;
  }
  caps.library_gemm_unavailable_reason = device.library_gemm_unavailable;
  return caps;
}

}  // namespace asynctp::hip
