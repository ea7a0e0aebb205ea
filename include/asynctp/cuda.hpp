// The CUDA backend's loopback group (asynctp/loopback.hpp): W virtual ranks
// on one NVIDIA GPU. Native needs sm_90 (the planner says so per call);
// pipelined and decomposed run on sm_80 and newer.
//
// Built only where nvcc and the CUTLASS headers were found (the library then
// defines ASYNCTP_HAVE_CUDA_BACKEND for its users through CMake). Needs no
// CUDA headers.
#pragma once

#include "asynctp/loopback.hpp"

namespace asynctp::cuda {

using loopback::Link;
using loopback::LoopbackConfig;
using loopback::LoopbackGroup;
using loopback::parse_link;
using loopback::to_string;
using loopback::unavailable_reason;

}  // namespace asynctp::cuda
