#include "core/schedule.hpp"

#include <algorithm>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::core {

std::vector<int> chunk_order(int world_size, int pivot) {
  std::vector<int> order(static_cast<std::size_t>(world_size));
  for (int i = 0; i < world_size; ++i) order[i] = (pivot + i) % world_size;
  return order;
}

std::vector<int> send_order(int world_size, int rank) {
  return chunk_order(world_size, (rank + 1) % world_size);
}

int partial_slot(int world_size, int owner, int source) noexcept {
  return ((owner - source - 1) % world_size + world_size) % world_size;
}

int partial_source(int world_size, int owner, int slot) noexcept {
  return ((owner - slot - 1) % world_size + world_size) % world_size;
}

TileSchedule::TileSchedule(int world_size, int pivot, std::int64_t m, std::int64_t n,
                           std::int64_t tile_m, std::int64_t tile_n)
    : world_size_(world_size), m_(m), n_(n), tile_m_(tile_m), tile_n_(tile_n) {
  if (world_size < 1 || pivot < 0 || pivot >= world_size) {
    throw Error(ErrorCode::invalid_argument, "schedule: pivot " + std::to_string(pivot) +
                                                 " must lie in [0, " + std::to_string(world_size) +
                                                 ")");
  }
  if (m <= 0 || n <= 0 || tile_m <= 0 || tile_n <= 0) {
    throw Error(ErrorCode::invalid_argument, "schedule: sizes and tile sizes must be positive");
  }
  m_tiles_ = (m + tile_m - 1) / tile_m;
  n_tiles_ = (n + tile_n - 1) / tile_n;
  tiles_per_chunk_ = m_tiles_ * n_tiles_;
  order_ = chunk_order(world_size, pivot);
}

OutputTile TileSchedule::tile(std::int64_t index) const noexcept {
  const std::int64_t position = index / tiles_per_chunk_;
  const std::int64_t within = index % tiles_per_chunk_;
  const std::int64_t m_tile = within / n_tiles_;
  const std::int64_t n_tile = within % n_tiles_;
  OutputTile t;
  t.chunk = order_[static_cast<std::size_t>(position)];
  const std::int64_t chunk_begin = t.chunk * m_;
  t.row_begin = chunk_begin + m_tile * tile_m_;
  t.row_end = std::min(t.row_begin + tile_m_, chunk_begin + m_);
  t.col_begin = n_tile * tile_n_;
  t.col_end = std::min(t.col_begin + tile_n_, n_);
  return t;
}

}  // namespace asynctp::core
