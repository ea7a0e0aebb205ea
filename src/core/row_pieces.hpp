// Copies cut into whole rows of at most a given size: how many rows one piece
// holds (at least one, when a single row is larger; 0 for empty rows). One
// rule for the AMD deadlock rule's pieces (hip::copy_pieces) and the GPU
// producer's copies (gpu::copy_rows).
#pragma once

#include <algorithm>
#include <cstddef>

namespace asynctp::core {

constexpr std::size_t rows_per_piece(std::size_t row_bytes, std::size_t max_bytes) {
  return row_bytes == 0 ? 0 : std::max<std::size_t>(1, max_bytes / row_bytes);
}

}  // namespace asynctp::core
