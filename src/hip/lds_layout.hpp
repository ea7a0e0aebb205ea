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

}  // namespace asynctp::hip::lds
