#include "gpu/copy.hpp"

#include <algorithm>

#include "gpu/check.hpp"

namespace asynctp::gpu {

std::size_t copy_piece_bytes(std::size_t bytes, std::size_t row_bytes, std::size_t max_bytes) {
  if (bytes <= max_bytes || row_bytes == 0) return bytes;
  const std::size_t rows = std::max<std::size_t>(1, max_bytes / row_bytes);
  return std::min(bytes, rows * row_bytes);
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
