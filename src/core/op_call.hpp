// One collective call's arguments, for any op. The ops' rules
// (core/validate.hpp) read it, and the call flow (call/collective.hpp) and
// every transport pass it on, so that a new op adds fields here, its rules
// and a schedule per transport, never a communicator or a call flow.
#pragma once

#include "asynctp/tensor.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

struct OpCall {
  OpKind op = OpKind::all_gather_matmul;
  // all-gather + matmul: a = this rank's A shard (m x k), b = B (k x n),
  //   out = C ((W*m) x n)
  // matmul + reduce-scatter: a = this rank's A (M x k, its K-slice),
  //   b = its B slice (k x n), out = its rows of the sum ((M/W) x n)
  TensorView a;
  TensorView b;
  TensorView out;
  const TensorView* a_gathered_out = nullptr;  // all-gather + matmul only
};

}  // namespace asynctp::core
