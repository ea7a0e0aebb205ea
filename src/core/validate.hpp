// The ops' argument rules, every transport's first check of a call. Pure:
// reads only the views' metadata (never the data), so it is safe to call
// before anything is written.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/op_call.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

// 32-bit indexing limit of the GPU kernels, applied to every tensor.
inline constexpr std::int64_t kMaxElementsPerTensor = (std::int64_t{1} << 31) - 1;
// TMA and vectorized copies need 16-byte aligned base addresses.
inline constexpr std::uintptr_t kRequiredAlignmentBytes = 16;

// The rules of call.op on this rank's arguments. Throws
// Error(invalid_argument) naming the argument and the rule it broke.
ProblemDesc validate_op(const OpCall& call, int world_size, int rank, DeviceKind device_kind);

// The call's tensors with the argument names users know them by, so that a
// transport's own checks (e.g. device residency) work for every op.
std::vector<std::pair<const char*, TensorView>> named_tensors(const OpCall& call);

// Throws Error(invalid_argument) naming the argument and the rule it broke.
ProblemDesc validate_fused_all_gather_matmul(int world_size, int rank, DeviceKind device_kind,
                                             const TensorView& a_shard, const TensorView& b,
                                             const TensorView& c_out,
                                             const TensorView* a_gathered_out);

// a: M x k row-major (all M rows, this rank's K-slice), b: k x n row- or
// column-major, out: (M / world_size) x n row-major, one dtype for all.
// Throws Error(invalid_argument) naming the argument and the rule it broke.
ProblemDesc validate_fused_matmul_reduce_scatter(int world_size, int rank, DeviceKind device_kind,
                                                 const TensorView& a, const TensorView& b,
                                                 const TensorView& out);

// rows * cols without overflow; false if the product exceeds int64 or a
// dimension is negative.
bool checked_element_count(std::int64_t rows, std::int64_t cols, std::int64_t* count) noexcept;

}  // namespace asynctp::core
