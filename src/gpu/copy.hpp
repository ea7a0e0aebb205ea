// Stream-ordered copies of whole rows, cut where the runtime needs it
// (rt::kMaxCopyBytes: one copy on CUDA; whole-row pieces of at most 1 MiB on
// HIP, one row per piece when a row is larger).
#pragma once

#include <cstddef>

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Copies `bytes` (whole rows of `row_bytes`) from src to dst on `stream`;
// throws Error(backend) naming `what` on failure.
void copy_rows(void* dst, const void* src, std::size_t bytes, std::size_t row_bytes, rt::Copy kind,
               rt::StreamHandle stream, const char* what);

// The largest whole-row piece copy_rows issues (at least one row).
std::size_t copy_piece_bytes(std::size_t bytes, std::size_t row_bytes,
                             std::size_t max_bytes = rt::kMaxCopyBytes);

}  // namespace asynctp::gpu
