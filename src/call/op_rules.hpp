// What each op brings to the call flow besides its schedules: its argument
// rules (core/validate.hpp) and the names of its tensors, so that a
// transport's own checks (e.g. device residency) work for every op.
#pragma once

#include <utility>
#include <vector>

#include "asynctp/tensor.hpp"
#include "call/op_call.hpp"
#include "core/problem.hpp"

namespace asynctp::call {

// Throws Error(invalid_argument) naming the argument and the rule it broke.
core::ProblemDesc validate_op(const OpCall& call, int world_size, int rank, DeviceKind device_kind);

// The call's tensors with the argument names users know them by.
std::vector<std::pair<const char*, TensorView>> named_tensors(const OpCall& call);

}  // namespace asynctp::call
