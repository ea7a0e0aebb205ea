#include "gpu/copy.hpp"

#include <algorithm>

#include "core/row_pieces.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {

std::size_t copy_piece_bytes(std::size_t bytes, std::size_t row_bytes, std::size_t max_bytes) {
  if (row_bytes == 0) return bytes;
  return std::min(bytes, core::rows_per_piece(row_bytes, max_bytes) * row_bytes);
}

void copy_rows(void* dst, const void* src, std::size_t bytes, std::size_t row_bytes, rt::Copy kind,
               rt::StreamHandle stream, const char* what) {
  const std::size_t piece = copy_piece_bytes(bytes, row_bytes);
  for (std::size_t at = 0; at < bytes; at += piece) {
    const std::size_t n = std::min(piece, bytes - at);
    check(rt::memcpy_async(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at, n,
                           kind, stream),
          what);
  }
}

}  // namespace asynctp::gpu
