// The AMD kernel's LDS staging (src/hip/lds_layout.hpp), checked slot by slot:
//
//   HipLdsLayout.EveryOperandSlotIsStagedOnceAndPaddingNever
//       for both B layouts, the 256 threads' A and B vectors cover every
//       (row, k) and (column, k) of the stage exactly once and never touch the
//       padding; the stage fits in 64 KiB of LDS.
//   HipLdsLayout.LanesReadTheElementsTheInstructionExpects
//       decoding each lane's read offset gives the (row, k) / (k, column) the
//       instruction layout (mfma_layout.hpp) assigns to its items.
//   HipLdsLayout.StepVectorsLandWhereTheLayoutPutsTheirElements
//       the kernel's step vectors (a_step_vector / b_step_vector, which the
//       emulation replays): element i of each lands at the LDS slot of its
//       own (row, k) / (column, k), runs along the operand's contiguous
//       dimension, and is inside exactly when its first element is.
//   HipLdsLayout.StagedValuesComeFromTheRightGlobalElements
//       stage_k_step on a matrix of distinct values (edges included): every
//       slot holds the element at its (row, k0 + k) or zero past the edge.
#include "hip/lds_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "hip/mfma_emulation.hpp"

namespace asynctp::hip {
namespace {

using layout::RowCol;

TEST(HipLdsLayout, EveryOperandSlotIsStagedOnceAndPaddingNever) {
  EXPECT_LE(lds::kBytes, 64 * 1024);
  for (bool b_row_major : {true, false}) {
    std::vector<int> writes(lds::kAElements + lds::kBElements, 0);
    for (int t = 0; t < lds::kThreads; ++t) {
      for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
        const RowCol e = lds::a_vector(t, v);
        for (int i = 0; i < lds::kVector; ++i) ++writes[lds::a_offset(e.row, e.col + i)];
      }
      for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
        if (b_row_major) {
          const RowCol e = lds::b_vector_row_major(t, v);
          for (int i = 0; i < lds::kVector; ++i) ++writes[lds::b_offset(e.col + i, e.row)];
        } else {
          const RowCol e = lds::b_vector_col_major(t, v);
          for (int i = 0; i < lds::kVector; ++i) ++writes[lds::b_offset(e.col, e.row + i)];
        }
      }
    }
    for (int row = 0; row < layout::BlockTile::m; ++row) {
      for (int k = 0; k < lds::kPitch; ++k) {
        const int expected = k < layout::BlockTile::k ? 1 : 0;
        ASSERT_EQ(expected, writes[lds::a_offset(row, k)]) << "A row " << row << " k " << k;
        ASSERT_EQ(expected, writes[lds::b_offset(row, k)])
            << "B column " << row << " k " << k << (b_row_major ? " (B row-major)" : "");
      }
    }
  }
}

TEST(HipLdsLayout, LanesReadTheElementsTheInstructionExpects) {
  for (int wave = 0; wave < layout::BlockTile::waves; ++wave) {
    for (int step = 0; step < layout::BlockTile::k_steps; ++step) {
      for (int blk = 0; blk < layout::BlockTile::blocks_m; ++blk) {
        for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
          for (int item = 0; item < layout::kAItems; ++item) {
            const int a = lds::a_read(wave, blk, step, lane) + item;
            const RowCol ea = layout::a_element(lane, item);
            EXPECT_EQ(layout::block_origin(wave, blk, 0).row + ea.row, a / lds::kPitch);
            EXPECT_EQ(step * layout::kMfmaK + ea.col, a % lds::kPitch);
            const int b = lds::b_read(wave, blk, step, lane) + item - lds::kAElements;
            const RowCol eb = layout::b_element(lane, item);
            EXPECT_EQ(layout::block_origin(wave, 0, blk).col + eb.col, b / lds::kPitch);
            EXPECT_EQ(step * layout::kMfmaK + eb.row, b % lds::kPitch);
          }
          // The 4 items are one aligned 8-byte read.
          EXPECT_EQ(0, lds::a_read(wave, blk, step, lane) % 4);
          EXPECT_EQ(0, lds::b_read(wave, blk, step, lane) % 4);
        }
      }
    }
  }
}

TEST(HipLdsLayout, StepVectorsLandWhereTheLayoutPutsTheirElements) {
  const std::int64_t tile_row = 512, tile_col = 256, k0 = 64;
  for (bool b_row_major : {true, false}) {
    for (int t = 0; t < lds::kThreads; ++t) {
      for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
        const lds::StepVector sv = lds::a_step_vector(t, v, tile_row, k0);
        EXPECT_FALSE(sv.along_rows);  // A is row-major: a vector runs along k
        for (int i = 0; i < lds::kVector; ++i) {
          ASSERT_EQ(sv.lds_first + i * sv.lds_stride,
                    lds::a_offset(static_cast<int>(sv.row_of(i) - tile_row),
                                  static_cast<int>(sv.col_of(i) - k0)));
        }
        EXPECT_TRUE(sv.inside(sv.row + 1, sv.col + 8));
        EXPECT_FALSE(sv.inside(sv.row, sv.col + 8));  // its row past the edge
        EXPECT_FALSE(sv.inside(sv.row + 1, sv.col));  // its k past the edge
      }
      for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
        const lds::StepVector sv = lds::b_step_vector(t, v, b_row_major, tile_col, k0);
        // Contiguous in memory: along the columns when row-major, along k if not.
        EXPECT_EQ(sv.along_rows, !b_row_major);
        for (int i = 0; i < lds::kVector; ++i) {
          ASSERT_EQ(sv.lds_first + i * sv.lds_stride,
                    lds::b_offset(static_cast<int>(sv.col_of(i) - tile_col),
                                  static_cast<int>(sv.row_of(i) - k0)));
        }
      }
    }
  }
}

TEST(HipLdsLayout, StagedValuesComeFromTheRightGlobalElements) {
  // 300 x 40 A and 40 x 264 B: the second K step and the last tiles run past
  // the edges (zero there).
  constexpr std::int64_t kM = 300, kK = 40, kN = 264;
  std::vector<std::uint16_t> a(kM * kK), b_row(kK * kN), b_col(kK * kN);
  for (std::int64_t i = 0; i < kM * kK; ++i)
    a[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(1 + i % 60000);
  for (std::int64_t kk = 0; kk < kK; ++kk) {
    for (std::int64_t j = 0; j < kN; ++j) {
      const auto v = static_cast<std::uint16_t>(1 + (kk * kN + j) % 60000);
      b_row[static_cast<std::size_t>(kk * kN + j)] = v;
      b_col[static_cast<std::size_t>(j * kK + kk)] = v;
    }
  }
  const Device host{DeviceKind::cpu, 0};
  const TensorView av = TensorView::row_major(a.data(), DType::bf16, kM, kK, host);
  for (bool row_major : {true, false}) {
    const TensorView bv = row_major
                              ? TensorView::row_major(b_row.data(), DType::bf16, kK, kN, host)
                              : TensorView::col_major(b_col.data(), DType::bf16, kK, kN, host);
    for (std::int64_t k0 : {0, 32}) {
      std::vector<std::uint16_t> stage;
      emulation::stage_k_step(av, bv, /*tile_row=*/256, /*tile_col=*/256, k0, stage);
      for (int r = 0; r < layout::BlockTile::m; ++r) {
        for (int k = 0; k < layout::BlockTile::k; ++k) {
          const std::int64_t gr = 256 + r, gk = k0 + k, gc = 256 + r;
          const std::uint16_t want_a =
              gr < kM && gk < kK ? a[static_cast<std::size_t>(gr * kK + gk)] : 0;
          ASSERT_EQ(want_a, stage[static_cast<std::size_t>(lds::a_offset(r, k))])
              << "A row " << gr << " k " << gk;
          const std::uint16_t want_b =
              gc < kN && gk < kK ? b_row[static_cast<std::size_t>(gk * kN + gc)] : 0;
          ASSERT_EQ(want_b, stage[static_cast<std::size_t>(lds::b_offset(r, k))])
              << "B k " << gk << " column " << gc << (row_major ? " (row-major)" : "");
        }
      }
    }
  }
}

}  // namespace
}  // namespace asynctp::hip
