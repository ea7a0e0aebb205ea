// The chunk order and the native tile schedule. Each rank starts on its own
// chunk and wraps around; output tiles cover C exactly once, never straddle
// two chunks (each tile waits on exactly one signal), and come chunk by chunk
// in arrival order, so the persistent GEMM works on what has arrived.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "asynctp/error.hpp"
#include "core/schedule.hpp"
#include "support/seed.hpp"

namespace asynctp::core {
namespace {

TEST(ChunkOrder, StartsAtPivotWrapsAndIsAPermutation) {
  for (int world = 1; world <= 8; ++world) {
    for (int pivot = 0; pivot < world; ++pivot) {
      SCOPED_TRACE("W=" + std::to_string(world) + " pivot=" + std::to_string(pivot));
      const std::vector<int> order = chunk_order(world, pivot);
      ASSERT_EQ(order.size(), static_cast<std::size_t>(world));
      EXPECT_EQ(order.front(), pivot);
      for (int i = 0; i < world; ++i) EXPECT_EQ(order[i], (pivot + i) % world);
      std::vector<int> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> identity(static_cast<std::size_t>(world));
      std::iota(identity.begin(), identity.end(), 0);
      EXPECT_EQ(sorted, identity);
    }
  }
  // At each step, the W ranks pull from W different peers.
  for (int world = 2; world <= 8; ++world) {
    for (int step = 0; step < world; ++step) {
      std::vector<bool> used(static_cast<std::size_t>(world), false);
      for (int rank = 0; rank < world; ++rank) {
        const int chunk = chunk_order(world, rank)[static_cast<std::size_t>(step)];
        EXPECT_FALSE(used[static_cast<std::size_t>(chunk)]) << "W=" << world << " step " << step;
        used[static_cast<std::size_t>(chunk)] = true;
      }
    }
  }
}

struct ScheduleCase {
  int world, pivot;
  std::int64_t m, n, tile_m, tile_n;
};

void check_schedule(const ScheduleCase& c) {
  SCOPED_TRACE("W=" + std::to_string(c.world) + " pivot=" + std::to_string(c.pivot) +
               " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " tile " +
               std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n));
  const TileSchedule s(c.world, c.pivot, c.m, c.n, c.tile_m, c.tile_n);
  const std::int64_t m_tiles = (c.m + c.tile_m - 1) / c.tile_m;
  const std::int64_t n_tiles = (c.n + c.tile_n - 1) / c.tile_n;
  ASSERT_EQ(s.tiles_per_chunk(), m_tiles * n_tiles);
  ASSERT_EQ(s.size(), m_tiles * n_tiles * c.world);
  ASSERT_EQ(s.chunks(), chunk_order(c.world, c.pivot));

  std::vector<int> hits(static_cast<std::size_t>(c.world * c.m * c.n), 0);
  const std::vector<int> order = chunk_order(c.world, c.pivot);
  for (std::int64_t index = 0; index < s.size(); ++index) {
    const OutputTile t = s.tile(index);
    // Chunk-major in arrival order.
    ASSERT_EQ(t.chunk, order[static_cast<std::size_t>(index / s.tiles_per_chunk())]) << index;
    // Inside its chunk's rows, non-empty, at most one tile big, within C.
    const std::int64_t chunk_begin = t.chunk * c.m;
    ASSERT_GE(t.row_begin, chunk_begin) << index;
    ASSERT_LE(t.row_end, chunk_begin + c.m) << index;
    ASSERT_LT(t.row_begin, t.row_end) << index;
    ASSERT_LE(t.row_end - t.row_begin, c.tile_m) << index;
    ASSERT_GE(t.col_begin, 0);
    ASSERT_LT(t.col_begin, t.col_end) << index;
    ASSERT_LE(t.col_end, c.n) << index;
    ASSERT_LE(t.col_end - t.col_begin, c.tile_n) << index;
    // Within a chunk: M tiles, then N tiles (row-major over the tile grid).
    const std::int64_t within = index % s.tiles_per_chunk();
    ASSERT_EQ(t.row_begin, chunk_begin + (within / n_tiles) * c.tile_m) << index;
    ASSERT_EQ(t.col_begin, (within % n_tiles) * c.tile_n) << index;
    for (std::int64_t i = t.row_begin; i < t.row_end; ++i) {
      for (std::int64_t j = t.col_begin; j < t.col_end; ++j) {
        ++hits[static_cast<std::size_t>(i * c.n + j)];
      }
    }
  }
  const auto bad = std::find_if(hits.begin(), hits.end(), [](int h) { return h != 1; });
  EXPECT_EQ(bad, hits.end()) << "element " << (bad - hits.begin()) << " covered "
                             << (bad == hits.end() ? 1 : *bad) << " times";
}

TEST(TileSchedule, CoversEveryOutputElementExactlyOnce) {
  const ScheduleCase cases[] = {
      {1, 0, 64, 64, 16, 16},   // exact multiples
      {4, 2, 64, 48, 16, 16},   // n exact
      {4, 3, 40, 50, 16, 16},   // m and n both clipped
      {3, 1, 7, 9, 8, 8},       // one partial tile per chunk
      {8, 5, 24, 33, 8, 32},    // several M tiles, clipped N
      {2, 1, 256, 40, 256, 256},  // one tile per chunk wider than n
      {5, 4, 30, 17, 4, 5},
  };
  for (const ScheduleCase& c : cases) check_schedule(c);
}

TEST(TileSchedule, RandomShapes) {
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (int i = 0; i < 100; ++i) {
    std::uniform_int_distribution<int> world(1, 8), dim(1, 70), tile(1, 40);
    ScheduleCase c{world(rng), 0, dim(rng), dim(rng), tile(rng), tile(rng)};
    c.pivot = std::uniform_int_distribution<int>(0, c.world - 1)(rng);
    check_schedule(c);
  }
}

TEST(TileSchedule, InvalidArgumentsThrow) {
  const auto expect_invalid = [](auto make, const char* phrase) {
    try {
      make();
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  };
  expect_invalid([] { TileSchedule(4, -1, 8, 8, 8, 8); }, "pivot -1 must lie in [0, 4)");
  expect_invalid([] { TileSchedule(4, 4, 8, 8, 8, 8); }, "pivot 4 must lie in [0, 4)");
  expect_invalid([] { TileSchedule(0, 0, 8, 8, 8, 8); }, "pivot");
  expect_invalid([] { TileSchedule(2, 0, 0, 8, 8, 8); }, "must be positive");
  expect_invalid([] { TileSchedule(2, 0, 8, -8, 8, 8); }, "must be positive");
  expect_invalid([] { TileSchedule(2, 0, 8, 8, 0, 8); }, "must be positive");
  expect_invalid([] { TileSchedule(2, 0, 8, 8, 8, 0); }, "must be positive");
}

}  // namespace
}  // namespace asynctp::core
