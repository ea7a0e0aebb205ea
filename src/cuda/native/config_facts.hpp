// The native kernel's configs as the planner sees them (core::NativeConfig):
// for host code only, so that the kernel instances' translation units need
// nothing of the library's headers.
#pragma once

#include <vector>

#include "async_input_gemm.hpp"
#include "core/planner.hpp"

namespace asynctp::cuda::native {

// Every config built for args' B layout: its measured efficiency and, for
// args' shape, whether can_implement accepts it and the grid it would launch.
std::vector<core::NativeConfig> native_config_facts(const NativeGemmArgs& args);

}  // namespace asynctp::cuda::native
