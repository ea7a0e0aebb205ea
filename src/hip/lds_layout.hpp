// How the AMD kernel stages a K step of its block tile through LDS (issue 5):
// the workgroup's 256 threads load A (256 rows x 32 k) and B (32 k x 256
// columns) from global memory as 16-byte vectors (8 bf16), consecutive
// threads on consecutive addresses, and store them so that every lane then
// reads its 4 operand items of an instruction as one 8-byte LDS read: A as
// [row][k], B transposed as [column][k], each row padded by 8 elements
// (16 bytes) so that the 64 lanes' reads spread over the banks. Plain
// constexpr functions shared by the kernel and the host emulation, which
// checks them on the CPU (tests/hip/mfma_layout_test.cpp).
//
// Requirements the planner guarantees: K and N are multiples of 8 (a vector
// lies wholly inside or wholly outside the matrix), tensors 16-byte aligned.
#pragma once

#include <cstdint>

#include "hip/mfma_layout.hpp"

namespace asynctp::hip::lds {

using layout::BlockTile;
using layout::RowCol;

inline constexpr int kThreads = BlockTile::waves * layout::kWaveLanes;  // 256
inline constexpr int kVector = 8;                                       // bf16 per 16 bytes
inline constexpr int kPitch = BlockTile::k + kVector;                   // elements per LDS row (40)
inline constexpr int kAElements = BlockTile::m * kPitch;
inline constexpr int kBElements = BlockTile::n * kPitch;
inline constexpr int kBytes = 2 * (kAElements + kBElements);   // 40 KiB: fits every gfx9 CU
inline constexpr int kVectorsPerRow = BlockTile::k / kVector;  // 4
inline constexpr int kAVectorsPerThread = BlockTile::m * kVectorsPerRow / kThreads;  // 4
inline constexpr int kBVectorsPerThread = BlockTile::n * kVectorsPerRow / kThreads;  // 4
static_assert(BlockTile::m * kVectorsPerRow % kThreads == 0);
static_assert(BlockTile::n * kVectorsPerRow % kThreads == 0);

// The v-th A vector of thread `thread`: tile row, first k of its 8.
ASYNCTP_HOST_DEVICE constexpr RowCol a_vector(int thread, int v) {
  const int id = v * kThreads + thread;
  return {id / kVectorsPerRow, (id % kVectorsPerRow) * kVector};
}

// The v-th B vector of thread `thread` when B is row-major (contiguous along
// the columns): {k, first column of its 8}.
ASYNCTP_HOST_DEVICE constexpr RowCol b_vector_row_major(int thread, int v) {
  constexpr int per_k = BlockTile::n / kVector;  // 32 vectors along one k row
  const int id = v * kThreads + thread;
  return {id / per_k, (id % per_k) * kVector};
}

// The v-th B vector of thread `thread` when B is column-major (contiguous
// along k): {first k of its 8, column}.
ASYNCTP_HOST_DEVICE constexpr RowCol b_vector_col_major(int thread, int v) {
  const int id = v * kThreads + thread;
  return {(id % kVectorsPerRow) * kVector, id / kVectorsPerRow};
}

// Element offsets in the A and B stages (B's stage follows A's).
ASYNCTP_HOST_DEVICE constexpr int a_offset(int row, int k) { return row * kPitch + k; }
ASYNCTP_HOST_DEVICE constexpr int b_offset(int col, int k) { return kAElements + col * kPitch + k; }

// Where lane `lane` of wave `wave` reads its 4 items (consecutive offsets)
// for instruction block bm (A) or bn (B) at K sub-step `step` of the stage.
ASYNCTP_HOST_DEVICE constexpr int a_read(int wave, int bm, int step, int lane) {
  const RowCol e = layout::a_element(lane, 0);
  return a_offset(layout::block_origin(wave, bm, 0).row + e.row, step * layout::kMfmaK + e.col);
}
ASYNCTP_HOST_DEVICE constexpr int b_read(int wave, int bn, int step, int lane) {
  const RowCol e = layout::b_element(lane, 0);
  return b_offset(layout::block_origin(wave, 0, bn).col + e.col, step * layout::kMfmaK + e.row);
}

// One of a thread's vectors in the K step at k0, as the kernel moves it and
// the emulation replays it: the operand element (row, col) of its first bf16
// (A: row, k; B: k, column), whether its 8 elements run down the operand's
// rows (a column-major B: along k) or along its columns, and where each lands
// in LDS (element i at lds_first + i * lds_stride: stride 1 when the vector
// lands as it is, kPitch when a row-major B's vector is transposed into
// [column][k]). In global memory the 8 elements are contiguous either way.
struct StepVector {
  std::int64_t row = 0, col = 0;
  bool along_rows = false;
  int lds_first = 0;
  int lds_stride = 1;

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
};

// A's v-th vector of `thread`, tile at row tile_row.
ASYNCTP_HOST_DEVICE constexpr StepVector a_step_vector(int thread, int v, std::int64_t tile_row,
                                                       std::int64_t k0) {
  const RowCol e = a_vector(thread, v);
  return {tile_row + e.row, k0 + e.col, false, a_offset(e.row, e.col), 1};
}

// B's v-th vector of `thread`, tile at column tile_col.
ASYNCTP_HOST_DEVICE constexpr StepVector b_step_vector(int thread, int v, bool b_row_major,
                                                       std::int64_t tile_col, std::int64_t k0) {
  if (b_row_major) {
    const RowCol e = b_vector_row_major(thread, v);  // {k, first column}
    return {k0 + e.row, tile_col + e.col, false, b_offset(e.col, e.row), kPitch};
  }
  const RowCol e = b_vector_col_major(thread, v);  // {first k, column}
  return {k0 + e.row, tile_col + e.col, true, b_offset(e.col, e.row), 1};
}

}  // namespace asynctp::hip::lds
