// The local half of a call, as the call flow hands it from the check step to
// the agreement and the enqueue: the options as resolved, the validated
// problem, the plan, and what a GPU transport adds (the native kernel, the
// signal pieces, whether the caller's stream is capturing a graph).
#pragma once

#include <optional>

#include "core/config.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"

namespace asynctp::call {

struct CheckedCall {
  core::ResolvedOptions resolved;
  core::ProblemDesc problem;
  core::Plan plan;
  std::optional<core::NativeKernel> kernel;  // set when the plan is native
  int pieces = 1;                            // signal pieces per chunk
  bool capturing = false;
};

}  // namespace asynctp::call
