// The HIP backend's loopback group (asynctp/loopback.hpp): W virtual ranks
// on one AMD GPU. Native needs gfx942 or gfx950 (MI300X, MI355X; the planner
// says so per call); pipelined and decomposed need hipBLAS, found when the
// library was built.
//
// Built only in a ROCm build (ASYNCTP_ROCM_ARCH naming gfx942 or gfx950, with
// ROCm 6 or newer; the library then defines ASYNCTP_HAVE_HIP_BACKEND). It has
// never run on AMD hardware: see README.md. Needs no HIP headers.
#pragma once

#include "asynctp/loopback.hpp"

namespace asynctp::hip {

using loopback::Link;
using loopback::LoopbackConfig;
using loopback::LoopbackGroup;
using loopback::parse_link;
using loopback::to_string;
using loopback::unavailable_reason;

}  // namespace asynctp::hip
