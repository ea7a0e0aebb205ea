// The two rules that keep AMD's producer from deadlocking a persistent grid
// (DESIGN.md, Deadlock rules), beside the grid rule of mfma_layout.hpp (a CU per
// shader engine left free):
//  - HIP runs small peer copies and signal writes as kernels; the reference
//    keeps every copy to pieces of at most 1 MiB, and so does this producer
//    (whole rows, so a piece never splits a tile row). Whether that keeps
//    each piece on the copy engines is for the AMD run to show.
//  - Streams beyond the GPU's hardware queues (GPU_MAX_HW_QUEUES, HIP's
//    default 4) share queues, and a producer queued behind the persistent
//    GEMM would never start: the call needs its streams to fit, or the
//    planner falls back (as CUDA_DEVICE_MAX_CONNECTIONS=1 does on NVIDIA).
// Pure functions, tested on the CPU; the HIP runtime layer applies them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace asynctp::hip {

inline constexpr std::size_t kMaxCopyPieceBytes = std::size_t{1} << 20;
inline constexpr int kDefaultHardwareQueues = 4;  // HIP's GPU_MAX_HW_QUEUES default

struct CopyPiece {
  std::size_t offset = 0;  // bytes from the chunk's start
  std::size_t bytes = 0;
};

// A chunk of `rows` rows of `row_bytes` each, as copy pieces of whole rows,
// each at most kMaxCopyPieceBytes (one row per piece when a row is larger).
std::vector<CopyPiece> copy_pieces(std::size_t rows, std::size_t row_bytes);

// The hardware queues a process has (GPU_MAX_HW_QUEUES, else HIP's
// default). Throws Error(invalid_argument) naming the variable when it is not
// a positive integer.
int hardware_queues(const core::EnvLookup& env = core::process_env);

// Why `streams` streams (the caller's plus the call's side streams) cannot
// overlap on `queues` hardware queues, or nullopt when they can.
std::optional<std::string> queue_blocker(int streams, int queues);

}  // namespace asynctp::hip
