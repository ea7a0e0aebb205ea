// The order in which chunks arrive and output tiles are computed.
// All-gather + matmul: chunk c of the gathered A holds rank c's shard (rows
// [c*m, (c+1)*m)). Every rank starts on its own chunk (pivot = rank), which
// needs no communication, then takes rank+1, rank+2, ... wrapping around, so
// at any moment the ranks pull from different peers. Output tiles never
// straddle two chunks, so each tile waits on exactly one signal.
// Matmul + reduce-scatter: see send_order; tiles never straddle two chunks,
// so each tile counts toward exactly one chunk's completion.
#pragma once

#include <cstdint>
#include <vector>

namespace asynctp::core {

// world_size chunk indices starting at pivot, wrapping around.
std::vector<int> chunk_order(int world_size, int pivot);

// Matmul + reduce-scatter: the order in which rank `rank` computes the
// chunks of its partial product and ships them, the mirror of the
// all-gather's order: at step i (0 <= i < W) it computes chunk rank+1+i
// (mod W), so it computes the chunk of the rank farthest along the ring
// first and its own chunk last, the one chunk no link waits for. At every
// step the W ranks ship to W different owners (rank s to s+1+i), so no
// owner receives two partials at once and every link carries one.
// chunk_order(world_size, (rank + 1) % world_size); a TileSchedule with that
// pivot gives the native GEMM's tile order.
std::vector<int> send_order(int world_size, int rank);

// The step at which `source` ships its partial of chunk `owner`,
// (owner - source - 1) mod W, in [0, W - 1) for source != owner. It is also
// the owner's receive slot (and signal) for that partial: slot i of an
// owner's inbox holds what arrives at step i, so an owner's W - 1 slots fill
// in slot order and it reduces them in that order.
int partial_slot(int world_size, int owner, int source) noexcept;
// The inverse: who ships into slot `slot` of `owner`.
int partial_source(int world_size, int owner, int slot) noexcept;

struct OutputTile {
  int chunk = 0;
  std::int64_t row_begin = 0;  // rows of the gathered A / of C
  std::int64_t row_end = 0;
  std::int64_t col_begin = 0;  // columns of C
  std::int64_t col_end = 0;
};

class TileSchedule {
 public:
  // Throws Error(invalid_argument) on non-positive sizes or a pivot outside
  // [0, world_size).
  TileSchedule(int world_size, int pivot, std::int64_t m, std::int64_t n, std::int64_t tile_m,
               std::int64_t tile_n);

  std::int64_t size() const noexcept { return tiles_per_chunk_ * world_size_; }
  std::int64_t tiles_per_chunk() const noexcept { return tiles_per_chunk_; }
  const std::vector<int>& chunks() const noexcept { return order_; }
  // The index-th tile in schedule order: chunk-major in arrival order, then
  // M tiles, then N tiles. A chunk's last M tile is clipped at the chunk's end.
  OutputTile tile(std::int64_t index) const noexcept;

 private:
  int world_size_;
  std::int64_t m_, n_, tile_m_, tile_n_;
  std::int64_t m_tiles_, n_tiles_, tiles_per_chunk_;
  std::vector<int> order_;
};

}  // namespace asynctp::core
