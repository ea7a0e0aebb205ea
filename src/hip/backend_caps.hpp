// What the HIP backend can run for one problem on one device: the planner's
// capabilities (core::BackendCaps) from the device's facts, applying the
// AMD rules where the planner sees them: native only on gfx942/gfx950 with
// a known persistent-grid rule and within the kernel's limits (native_rules,
// device_topology), its plan's reason stating the grid's deadlock rule (a
// CU per shader engine left out); auto falls back to decomposed when the
// call's streams do not fit the hardware queues (deadlock_rules); without
// hipBLAS only native can run. Pure, tested on the CPU through core::plan;
// the HIP communicator fills the facts from the device (hipDeviceProp_t,
// GPU_MAX_HW_QUEUES, the build).
#pragma once

#include <string>

#include "core/planner.hpp"
#include "core/problem.hpp"
#include "hip/deadlock_rules.hpp"

namespace asynctp::hip {

// Streams a native call keeps busy at once: the caller's, copy-in, the GEMM's
// and copy-out (the PCIe-style link's first hop).
inline constexpr int kNativeCallStreams = 4;

struct HipDeviceFacts {
  std::string gcn_arch_name;  // hipDeviceProp_t::gcnArchName, e.g. "gfx942:sramecc+:xnack-"
  int compute_units = 0;      // hipDeviceProp_t::multiProcessorCount
  int hardware_queues = kDefaultHardwareQueues;  // hardware_queues()
  std::string library_gemm_unavailable;          // library_gemm_unavailable_reason()
};

core::BackendCaps hip_caps(const HipDeviceFacts& device, const core::ProblemDesc& problem);

}  // namespace asynctp::hip
