// How the AMD kernel stages its block tile's K steps through LDS: two
// stages (double buffering: the threads fill one while the waves read the
// other), each holding one K step of A (256 rows x 32 k) and of B (256
// columns x 32 k, transposed to [column][k]), 32 KiB per stage, 64 KiB in
// all: the whole LDS of a gfx942 CU, so the 32 k of a row are not padded but
// swizzled. Plain constexpr functions shared by the kernel and the host
// emulation, which checks them on the CPU (tests/hip/lds_layout_test.cpp).
//
// The swizzle: LDS serves 128 bytes (32 banks of 4 bytes) per clock, and a
// row of 32 bf16 is 64 bytes, so rows 2L and 2L+1 share the 128-byte line L.
// A line holds 8 units of 16 bytes (8 bf16); the unit of (row, k) is
// (4 * (row % 2) + k / 8) XOR (L % 8). Then each of these touches all 32
// banks once in every group of lanes LDS serves together:
//  - a wave's fragment reads (16 bytes per lane: 32 consecutive rows, one
//    unit each; 8 lanes per clock),
//  - the threads' 16-byte stores of A and of a column-major B (2 rows x 4
//    units per 8 lanes),
//  - the 4-byte stores that transpose a row-major B (32 lanes per clock:
//    the 32 k of 2 columns 8 apart, whose lines differ in L % 8's top bit).
//
// Requirements the planner guarantees: K and N are multiples of 8 (a vector
// lies wholly inside or wholly outside the matrix), tensors 16-byte aligned.
#pragma once

#include <cstdint>

#include "hip/mfma_layout.hpp"

namespace asynctp::hip::lds {

using layout::BlockTile;
using layout::RowCol;

inline constexpr int kThreads = BlockTile::waves * layout::kWaveLanes;  // 512
inline constexpr int kVector = 8;                                       // bf16 per 16 bytes
inline constexpr int kUnitsPerRow = BlockTile::k / kVector;             // 4
inline constexpr int kAElements = BlockTile::m * BlockTile::k;
inline constexpr int kBElements = BlockTile::n * BlockTile::k;
inline constexpr int kStageElements = kAElements + kBElements;  // 32 KiB
inline constexpr int kStages = 2;
inline constexpr int kBytes = 2 * kStages * kStageElements;                        // 64 KiB
inline constexpr int kAVectorsPerThread = BlockTile::m * kUnitsPerRow / kThreads;  // 2
inline constexpr int kBVectorsPerThread = BlockTile::n * kUnitsPerRow / kThreads;  // 2
// A row-major B's thread holds kBVectorsPerThread consecutive k of 8
// columns; kThreadsPerKRow of them cover the K step's 32 k.
inline constexpr int kThreadsPerKRow = BlockTile::k / kBVectorsPerThread;  // 16
static_assert(BlockTile::m * kUnitsPerRow % kThreads == 0);
static_assert(BlockTile::n * kUnitsPerRow % kThreads == 0);

// The workgroup's vote on a tile's chunk (one int per wave) lives in stage
// 1's first bytes: no wave touches LDS between a tile's last K step and the
// next tile's vote, and stage 1 is first written after a barrier that
// follows every wave's reading of the votes.
inline constexpr int kVoteElement = kStageElements;

// Element offset of (line, k) in one operand's 256 x 32 block: `line` is the
// A row or B column within the tile, k the K step's k.
ASYNCTP_HOST_DEVICE constexpr int swizzled(int line, int k) {
  const int pair = line / 2;  // the 128-byte LDS line
  const int unit = (kUnitsPerRow * (line % 2) + k / kVector) ^ (pair % 8);
  return pair * 2 * BlockTile::k + unit * kVector + k % kVector;
}

// Element offsets in stage `stage` (0 or 1): A's block, then B's.
ASYNCTP_HOST_DEVICE constexpr int a_offset(int stage, int row, int k) {
  return stage * kStageElements + swizzled(row, k);
}
ASYNCTP_HOST_DEVICE constexpr int b_offset(int stage, int col, int k) {
  return stage * kStageElements + kAElements + swizzled(col, k);
}

// Where lane `lane` of wave `wave` reads the q-th (0, 1) 16-byte half of its
// 16 consecutive k (BlockTile::lane_k) for instruction block bm (A) or bn (B).
ASYNCTP_HOST_DEVICE constexpr int a_fragment(int stage, int wave, int bm, int lane, int q) {
  return a_offset(stage, layout::block_origin(wave, bm, 0).row + lane % 32,
                  BlockTile::lane_k * (lane / 32) + kVector * q);
}
ASYNCTP_HOST_DEVICE constexpr int b_fragment(int stage, int wave, int bn, int lane, int q) {
  return b_offset(stage, layout::block_origin(wave, 0, bn).col + lane % 32,
                  BlockTile::lane_k * (lane / 32) + kVector * q);
}

// One 16-byte vector a thread moves from global memory into a stage, as the
// kernel moves it and the emulation replays it: the operand element (row,
// col) of its first bf16 (A: row, k; B: k, column), whether its 8 bf16 run
// down the operand's rows (a column-major B: along k) or along its columns
// (A along k, a row-major B along n), and where its first bf16 sits in the
// tile (line: A row or B column; k: the K step's k).
struct StepVector {
  std::int64_t row = 0, col = 0;
  bool along_rows = false;
  int line = 0, k = 0;
  bool line_varies = false;  // element i is at line + i (row-major B), else at k + i

  ASYNCTP_HOST_DEVICE constexpr std::int64_t row_of(int i) const {
    return row + (along_rows ? i : 0);
  }
  ASYNCTP_HOST_DEVICE constexpr std::int64_t col_of(int i) const {
    return col + (along_rows ? 0 : i);
  }
  // Inside a rows x cols operand: K and N are multiples of 8, so the vector
  // is wholly inside or wholly outside (outside: the kernel stages zeros).
  ASYNCTP_HOST_DEVICE constexpr bool inside(std::int64_t rows, std::int64_t cols) const {
    return row < rows && col < cols;
  }
  ASYNCTP_HOST_DEVICE constexpr int line_of(int i) const { return line + (line_varies ? i : 0); }
  ASYNCTP_HOST_DEVICE constexpr int k_of(int i) const { return k + (line_varies ? 0 : i); }
};

// A's v-th vector of `thread` in the K step at k0, tile at row tile_row:
// four consecutive threads cover the 64 bytes of one row.
ASYNCTP_HOST_DEVICE constexpr StepVector a_step_vector(int thread, int v, std::int64_t tile_row,
                                                       std::int64_t k0) {
  const int id = v * kThreads + thread;
  const int row = id / kUnitsPerRow, k = (id % kUnitsPerRow) * kVector;
  return {tile_row + row, k0 + k, false, row, k, false};
}

// B's v-th vector of `thread`, tile at column tile_col. Column-major B (k
// contiguous): as A, a column for a row. Row-major B (n contiguous): thread
// t takes k = 2 (t % 16) + v, columns 8 (t / 16) .. + 7, so that its 2
// vectors transpose in registers into 8 pieces of 2 k, one per column
// (b_row_major_piece).
ASYNCTP_HOST_DEVICE constexpr StepVector b_step_vector(int thread, int v, bool b_row_major,
                                                       std::int64_t tile_col, std::int64_t k0) {
  if (b_row_major) {
    const int k = kBVectorsPerThread * (thread % kThreadsPerKRow) + v;
    const int col = kVector * (thread / kThreadsPerKRow);
    return {k0 + k, tile_col + col, false, col, k, true};
  }
  const int id = v * kThreads + thread;
  const int col = id / kUnitsPerRow, k = (id % kUnitsPerRow) * kVector;
  return {k0 + k, tile_col + col, true, col, k, false};
}

// Where element i of a step vector lands in stage `stage`.
ASYNCTP_HOST_DEVICE constexpr int a_slot(int stage, const StepVector& sv, int i) {
  return a_offset(stage, sv.line_of(i), sv.k_of(i));
}
ASYNCTP_HOST_DEVICE constexpr int b_slot(int stage, const StepVector& sv, int i) {
  return b_offset(stage, sv.line_of(i), sv.k_of(i));
}

// A row-major B's transposed piece c (0..7) of `thread`: column
// 8 (t / 16) + c, the kBVectorsPerThread k of its vectors (element c of
// each), one store.
ASYNCTP_HOST_DEVICE constexpr int b_row_major_piece(int stage, int thread, int c) {
  return b_offset(stage, kVector * (thread / kThreadsPerKRow) + c,
                  kBVectorsPerThread * (thread % kThreadsPerKRow));
}

}  // namespace asynctp::hip::lds
