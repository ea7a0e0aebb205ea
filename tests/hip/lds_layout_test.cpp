// The AMD kernel's LDS staging (src/hip/lds_layout.hpp), checked slot by slot:
//
//   HipLdsLayout.EveryStageSlotIsStoredOnce
//       for both B layouts and both stages, the kernel's stores (16-byte
//       vectors of A and of a column-major B, 4-byte transposed pieces of a
//       row-major B) cover every (row, k) and (column, k) of the stage
//       exactly once and nothing outside it; both stages fit in 64 KiB and
//       the workgroup's vote lies in stage 1.
//   HipLdsLayout.StoresLandWhereTheLayoutPutsTheirElements
//       each step vector's elements are the operand elements of its tile
//       slots, lie where the kernel's one wide store puts them (consecutive,
//       aligned), and are inside exactly when the first one is.
//   HipLdsLayout.LanesReadTheElementsTheyHold
//       decoding each lane's two 16-byte fragment reads gives its block's
//       row (column) and its 16 consecutive k, aligned.
//   HipLdsLayout.NoBankConflicts
//       under the model of one 128-byte LDS access per clock (8 lanes of
//       16 bytes, 32 lanes of 4 bytes), every group of lanes served together
//       hits 32 distinct banks: the fragment reads and all three stores.
//   HipLdsLayout.StagedValuesComeFromTheRightGlobalElements
//       stage_k_step on a matrix of distinct values (edges included): every
//       slot holds the element at its (row, k0 + k) or zero past the edge.
#include "hip/lds_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hip/mfma_emulation.hpp"

namespace asynctp::hip {
namespace {

using layout::BlockTile;
using layout::RowCol;

constexpr int kStageSlots = lds::kStages * lds::kStageElements;

// Where the kernel's stores of one K step land: (first slot, elements) per
// store, every thread's, for one B layout.
struct Store {
  int first = 0, elements = 0, lane = 0, wave = 0;
};

std::vector<std::vector<Store>> kernel_stores(int stage, bool b_row_major) {
  std::vector<std::vector<Store>> rounds;  // one per store instruction, all threads
  const std::int64_t tile = 0, k0 = 0;
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    std::vector<Store> round;
    for (int t = 0; t < lds::kThreads; ++t) {
      round.push_back({lds::a_slot(stage, lds::a_step_vector(t, v, tile, k0), 0), lds::kVector,
                       t % 64, t / 64});
    }
    rounds.push_back(round);
  }
  if (b_row_major) {
    for (int c = 0; c < lds::kVector; ++c) {
      std::vector<Store> round;
      for (int t = 0; t < lds::kThreads; ++t) {
        round.push_back(
            {lds::b_row_major_piece(stage, t, c), lds::kBVectorsPerThread, t % 64, t / 64});
      }
      rounds.push_back(round);
    }
  } else {
    for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
      std::vector<Store> round;
      for (int t = 0; t < lds::kThreads; ++t) {
        round.push_back({lds::b_slot(stage, lds::b_step_vector(t, v, false, tile, k0), 0),
                         lds::kVector, t % 64, t / 64});
      }
      rounds.push_back(round);
    }
  }
  return rounds;
}

// (stage, operand 0 = A / 1 = B, line, k) of every slot, by decoding.
struct Slot {
  int stage = -1, operand = -1, line = -1, k = -1;
};
std::vector<Slot> decode_slots() {
  std::vector<Slot> slots(kStageSlots);
  for (int stage = 0; stage < lds::kStages; ++stage) {
    for (int line = 0; line < BlockTile::m; ++line) {
      for (int k = 0; k < BlockTile::k; ++k) {
        slots[static_cast<std::size_t>(lds::a_offset(stage, line, k))] = {stage, 0, line, k};
        slots[static_cast<std::size_t>(lds::b_offset(stage, line, k))] = {stage, 1, line, k};
      }
    }
  }
  return slots;
}

TEST(HipLdsLayout, EveryStageSlotIsStoredOnce) {
  EXPECT_LE(lds::kBytes, 64 * 1024);
  EXPECT_EQ(lds::kStageElements, lds::kVoteElement);  // stage 1's start
  for (bool b_row_major : {true, false}) {
    for (int stage = 0; stage < lds::kStages; ++stage) {
      SCOPED_TRACE(std::string(b_row_major ? "B row-major" : "B column-major") + ", stage " +
                   std::to_string(stage));
      std::vector<int> writes(kStageSlots, 0);
      for (const auto& round : kernel_stores(stage, b_row_major)) {
        for (const Store& s : round) {
          for (int i = 0; i < s.elements; ++i) ++writes[static_cast<std::size_t>(s.first + i)];
        }
      }
      for (int slot = 0; slot < kStageSlots; ++slot) {
        const bool in_stage = slot / lds::kStageElements == stage;
        ASSERT_EQ(in_stage ? 1 : 0, writes[static_cast<std::size_t>(slot)]) << "slot " << slot;
      }
    }
  }
  // The swizzle is a permutation: every slot of both stages decodes once.
  std::set<int> offsets;
  for (int stage = 0; stage < lds::kStages; ++stage) {
    for (int line = 0; line < BlockTile::m; ++line) {
      for (int k = 0; k < BlockTile::k; ++k) {
        offsets.insert(lds::a_offset(stage, line, k));
        offsets.insert(lds::b_offset(stage, line, k));
      }
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(kStageSlots), offsets.size());
  EXPECT_EQ(0, *offsets.begin());
  EXPECT_EQ(kStageSlots - 1, *offsets.rbegin());
}

TEST(HipLdsLayout, StoresLandWhereTheLayoutPutsTheirElements) {
  const std::int64_t tile_row = 512, tile_col = 256, k0 = 64;
  const std::vector<Slot> slots = decode_slots();
  for (int stage = 0; stage < lds::kStages; ++stage) {
    for (int t = 0; t < lds::kThreads; ++t) {
      for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
        const lds::StepVector sv = lds::a_step_vector(t, v, tile_row, k0);
        EXPECT_FALSE(sv.along_rows);  // A is row-major: a vector runs along k
        EXPECT_EQ(0, lds::a_slot(stage, sv, 0) % lds::kVector) << "16-byte store misaligned";
        for (int i = 0; i < lds::kVector; ++i) {
          const int at = lds::a_slot(stage, sv, i);
          ASSERT_EQ(lds::a_slot(stage, sv, 0) + i, at) << "not one 16-byte store";
          const Slot s = slots[static_cast<std::size_t>(at)];
          ASSERT_EQ(0, s.operand);
          ASSERT_EQ(sv.row_of(i) - tile_row, s.line);
          ASSERT_EQ(sv.col_of(i) - k0, s.k);
        }
        EXPECT_TRUE(sv.inside(sv.row + 1, sv.col + 8));
        EXPECT_FALSE(sv.inside(sv.row, sv.col + 8));  // its row past the edge
        EXPECT_FALSE(sv.inside(sv.row + 1, sv.col));  // its k past the edge
      }
      for (bool b_row_major : {true, false}) {
        for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
          const lds::StepVector sv = lds::b_step_vector(t, v, b_row_major, tile_col, k0);
          // Contiguous in memory: along the columns when row-major, along k if not.
          EXPECT_EQ(sv.along_rows, !b_row_major);
          for (int i = 0; i < lds::kVector; ++i) {
            const int at = lds::b_slot(stage, sv, i);
            const Slot s = slots[static_cast<std::size_t>(at)];
            ASSERT_EQ(1, s.operand);
            ASSERT_EQ(sv.col_of(i) - tile_col, s.line);
            ASSERT_EQ(sv.row_of(i) - k0, s.k);
            if (b_row_major) {
              // Element i of vector v is item v of the thread's piece i.
              ASSERT_EQ(lds::b_row_major_piece(stage, t, i) + v, at);
              ASSERT_EQ(0, lds::b_row_major_piece(stage, t, i) % lds::kBVectorsPerThread)
                  << "piece store misaligned";
            } else {
              ASSERT_EQ(lds::b_slot(stage, sv, 0) + i, at) << "not one 16-byte store";
              ASSERT_EQ(0, lds::b_slot(stage, sv, 0) % lds::kVector);
            }
          }
        }
      }
    }
  }
}

// Decodes lane `lane`'s q-th 16-byte read at `first` and checks it holds
// line `line`, k 16 (lane / 32) + 8 q .. + 7 of `operand` in `stage`.
void expect_fragment(const std::vector<Slot>& slots, int first, int stage, int operand, int line,
                     int lane, int q) {
  ASSERT_EQ(0, first % lds::kVector) << "16-byte read misaligned";
  for (int e = 0; e < lds::kVector; ++e) {
    const Slot s = slots[static_cast<std::size_t>(first + e)];
    EXPECT_EQ(stage, s.stage);
    EXPECT_EQ(operand, s.operand);
    EXPECT_EQ(line, s.line);
    EXPECT_EQ(BlockTile::lane_k * (lane / 32) + lds::kVector * q + e, s.k);
  }
}

TEST(HipLdsLayout, LanesReadTheElementsTheyHold) {
  const std::vector<Slot> slots = decode_slots();
  for (int stage = 0; stage < lds::kStages; ++stage) {
    for (int wave = 0; wave < BlockTile::waves; ++wave) {
      for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
        for (int q = 0; q < 2; ++q) {
          for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
            expect_fragment(slots, lds::a_fragment(stage, wave, bm, lane, q), stage, 0,
                            layout::block_origin(wave, bm, 0).row + lane % 32, lane, q);
          }
          for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
            expect_fragment(slots, lds::b_fragment(stage, wave, bn, lane, q), stage, 1,
                            layout::block_origin(wave, 0, bn).col + lane % 32, lane, q);
          }
        }
      }
    }
  }
}

// Lanes of one wave, each accessing `bytes` bytes from byte address
// `address(lane)`: LDS serves 128 bytes (32 banks of 4) per clock, so groups
// of 128 / bytes consecutive lanes go together and conflict when two of them
// touch the same bank. Returns the worst group's clocks (1: no conflict).
int worst_group_clocks(int bytes, const std::function<int(int lane)>& address) {
  const int per_group = 128 / bytes;
  int worst = 1;
  for (int first = 0; first < layout::kWaveLanes; first += per_group) {
    std::map<int, int> bank_uses;
    for (int lane = first; lane < first + per_group; ++lane) {
      for (int word = 0; word < bytes / 4; ++word) {
        worst = std::max(worst, ++bank_uses[(address(lane) / 4 + word) % 32]);
      }
    }
  }
  return worst;
}

TEST(HipLdsLayout, NoBankConflicts) {
  for (int stage = 0; stage < lds::kStages; ++stage) {
    for (int wave = 0; wave < BlockTile::waves; ++wave) {
      for (int q = 0; q < 2; ++q) {
        for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
          EXPECT_EQ(
              1, worst_group_clocks(
                     16, [&](int lane) { return 2 * lds::a_fragment(stage, wave, bm, lane, q); }))
              << "A fragment read, wave " << wave << " block " << bm;
        }
        for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
          EXPECT_EQ(
              1, worst_group_clocks(
                     16, [&](int lane) { return 2 * lds::b_fragment(stage, wave, bn, lane, q); }))
              << "B fragment read, wave " << wave << " block " << bn;
        }
      }
    }
    for (bool b_row_major : {true, false}) {
      for (const auto& round : kernel_stores(stage, b_row_major)) {
        for (int wave = 0; wave < BlockTile::waves; ++wave) {
          const int bytes = 2 * round.front().elements;
          EXPECT_EQ(1, worst_group_clocks(
                           bytes,
                           [&](int lane) {
                             return 2 * round[static_cast<std::size_t>(wave * 64 + lane)].first;
                           }))
              << (b_row_major ? "B row-major" : "B column-major") << " store, wave " << wave;
        }
      }
    }
  }
  // The model can fail: the unswizzled layout (row * 32 + k) conflicts.
  EXPECT_LT(1, worst_group_clocks(16, [](int lane) { return 2 * ((lane % 32) * 32); }));
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
    std::vector<std::uint16_t> lds;
    for (std::int64_t k0 : {0, 32}) {
      const int stage = static_cast<int>(k0 / 32) % 2;
      emulation::stage_k_step(av, bv, /*tile_row=*/256, /*tile_col=*/256, k0, stage, lds);
      for (int r = 0; r < BlockTile::m; ++r) {
        for (int k = 0; k < BlockTile::k; ++k) {
          const std::int64_t gr = 256 + r, gk = k0 + k, gc = 256 + r;
          const std::uint16_t want_a =
              gr < kM && gk < kK ? a[static_cast<std::size_t>(gr * kK + gk)] : 0;
          ASSERT_EQ(want_a, lds[static_cast<std::size_t>(lds::a_offset(stage, r, k))])
              << "A row " << gr << " k " << gk;
          const std::uint16_t want_b =
              gc < kN && gk < kK ? b_row[static_cast<std::size_t>(gk * kN + gc)] : 0;
          ASSERT_EQ(want_b, lds[static_cast<std::size_t>(lds::b_offset(stage, r, k))])
              << "B k " << gk << " column " << gc << (row_major ? " (row-major)" : "");
        }
      }
    }
  }
}

}  // namespace
}  // namespace asynctp::hip
