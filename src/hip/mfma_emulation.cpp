#include "hip/mfma_emulation.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/dtype_convert.hpp"
#include "hip/lds_layout.hpp"
#include "hip/mfma_layout.hpp"

namespace asynctp::hip::emulation {
namespace {

using layout::BlockTile;
using layout::RowCol;

std::size_t at(int i) { return static_cast<std::size_t>(i); }

std::uint16_t load_bf16(const TensorView& t, std::int64_t row, std::int64_t col) {
  if (row < 0 || row >= t.rows || col < 0 || col >= t.cols) return 0;  // edge: zero fill
  std::uint16_t bits = 0;
  std::memcpy(&bits,
              static_cast<const char*>(t.data) + 2 * (row * t.row_stride + col * t.col_stride), 2);
  return bits;
}

void store_bf16(const TensorView& t, std::int64_t row, std::int64_t col, float value) {
  if (row >= t.rows || col >= t.cols) return;  // clipped at C's edges
  const std::uint16_t bits = layout::bf16_from_float_bits(std::bit_cast<std::uint32_t>(value));
  std::memcpy(static_cast<char*>(t.data) + 2 * (row * t.row_stride + col * t.col_stride), &bits, 2);
}

template <class Mfma>
void mfma(const LaneOperand& a, const LaneOperand& b, LaneC& acc) {
  // Gather the operands through the layout, as the hardware reads them.
  float am[layout::kMfmaM][Mfma::k] = {};
  float bm[Mfma::k][layout::kMfmaN] = {};
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int item = 0; item < Mfma::items; ++item) {
      const RowCol ea = Mfma::a_element(lane, item);
      am[ea.row][ea.col] = core::bf16_to_float(a[at(lane)][at(item)]);
      const RowCol eb = Mfma::b_element(lane, item);
      bm[eb.row][eb.col] = core::bf16_to_float(b[at(lane)][at(item)]);
    }
  }
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int item = 0; item < layout::kCItems; ++item) {
      const RowCol e = layout::c_element(lane, item);
      float sum = acc[at(lane)][at(item)];
      for (int k = 0; k < Mfma::k; ++k) sum += am[e.row][k] * bm[k][e.col];
      acc[at(lane)][at(item)] = sum;
    }
  }
}

// Each wave's accumulators: 4 x 2 instruction blocks of 64 lanes x 16.
using TileAcc = LaneC[BlockTile::waves][BlockTile::blocks_m][BlockTile::blocks_n];

// One K step of one wave from a stage: every lane reads its 16 k of each
// block (two 16-byte reads), then the instructions run sub-step by sub-step,
// item j of sub-step s being the lane's k items * s + j.
template <class Mfma>
void wave_k_step(const std::vector<std::uint16_t>& lds, int stage, int wave,
                 LaneC (&acc)[BlockTile::blocks_m][BlockTile::blocks_n]) {
  std::uint16_t a_frag[BlockTile::blocks_m][layout::kWaveLanes][BlockTile::lane_k];
  std::uint16_t b_frag[BlockTile::blocks_n][layout::kWaveLanes][BlockTile::lane_k];
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int q = 0; q < 2; ++q) {
      for (int e = 0; e < lds::kVector; ++e) {
        for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
          a_frag[bm][lane][q * lds::kVector + e] =
              lds[at(lds::a_fragment(stage, wave, bm, lane, q) + e)];
        }
        for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
          b_frag[bn][lane][q * lds::kVector + e] =
              lds[at(lds::b_fragment(stage, wave, bn, lane, q) + e)];
        }
      }
    }
  }
  for (int step = 0; step < Mfma::steps; ++step) {
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        LaneOperand la{}, lb{};
        for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
          for (int item = 0; item < Mfma::items; ++item) {
            la[at(lane)][at(item)] = a_frag[bm][lane][Mfma::items * step + item];
            lb[at(lane)][at(item)] = b_frag[bn][lane][Mfma::items * step + item];
          }
        }
        mfma<Mfma>(la, lb, acc[bm][bn]);
      }
    }
  }
}

template <class Mfma>
void block_tile_with(const TensorView& a, const TensorView& b, const TensorView& c,
                     std::int64_t tile_row, std::int64_t tile_col) {
  static thread_local TileAcc acc;
  for (auto& wave : acc) {
    for (auto& row : wave) {
      for (LaneC& block : row) {
        for (auto& lane : block) lane.fill(0.0f);
      }
    }
  }
  std::vector<std::uint16_t> lds;
  int step = 0;
  for (std::int64_t k0 = 0; k0 < a.cols; k0 += BlockTile::k, ++step) {
    const int stage = step % lds::kStages;
    stage_k_step(a, b, tile_row, tile_col, k0, stage, lds);  // then a barrier in the kernel
    for (int wave = 0; wave < BlockTile::waves; ++wave) {
      wave_k_step<Mfma>(lds, stage, wave, acc[wave]);
    }
  }
  for (int wave = 0; wave < BlockTile::waves; ++wave) {
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        const RowCol origin = layout::block_origin(wave, bm, bn);
        for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
          for (int item = 0; item < layout::kCItems; ++item) {
            const RowCol e = layout::c_element(lane, item);
            store_bf16(c, tile_row + origin.row + e.row, tile_col + origin.col + e.col,
                       acc[wave][bm][bn][at(lane)][at(item)]);
          }
        }
      }
    }
  }
}

}  // namespace

int instruction_k(Instruction instruction) {
  return instruction == Instruction::mfma_32x32x16_bf16 ? 16 : 8;
}

void mfma_32x32_bf16(Instruction instruction, const LaneOperand& a, const LaneOperand& b,
                     LaneC& acc) {
  if (instruction == Instruction::mfma_32x32x16_bf16) {
    mfma<layout::Mfma32x32x16>(a, b, acc);
  } else {
    mfma<layout::Mfma32x32x8>(a, b, acc);
  }
}

void stage_k_step(const TensorView& a, const TensorView& b, std::int64_t tile_row,
                  std::int64_t tile_col, std::int64_t k0, int stage,
                  std::vector<std::uint16_t>& lds) {
  if (lds.empty()) lds.assign(at(lds::kStages * lds::kStageElements), kUnstaged);
  // Poison the stage first: a slot no thread writes then shows in the result
  // (the kernel would read the stage's data of two K steps before).
  std::fill(lds.begin() + stage * lds::kStageElements,
            lds.begin() + (stage + 1) * lds::kStageElements, kUnstaged);
  const bool b_row_major = b.col_stride == 1;
  for (int thread = 0; thread < lds::kThreads; ++thread) {
    // A and a column-major B: each vector lands as it is (16 bytes).
    for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
      const lds::StepVector sv = lds::a_step_vector(thread, v, tile_row, k0);
      for (int i = 0; i < lds::kVector; ++i) {
        lds[at(lds::a_slot(stage, sv, i))] = load_bf16(a, sv.row_of(i), sv.col_of(i));
      }
    }
    if (!b_row_major) {
      for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
        const lds::StepVector sv = lds::b_step_vector(thread, v, false, tile_col, k0);
        for (int i = 0; i < lds::kVector; ++i) {
          lds[at(lds::b_slot(stage, sv, i))] = load_bf16(b, sv.row_of(i), sv.col_of(i));
        }
      }
      continue;
    }
    // A row-major B: the thread's vectors (consecutive k x 8 columns) leave
    // as 8 pieces, one per column, as the kernel transposes them.
    std::uint16_t held[lds::kBVectorsPerThread][lds::kVector];
    for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
      const lds::StepVector sv = lds::b_step_vector(thread, v, true, tile_col, k0);
      for (int i = 0; i < lds::kVector; ++i) held[v][i] = load_bf16(b, sv.row_of(i), sv.col_of(i));
    }
    for (int piece = 0; piece < lds::kVector; ++piece) {
      for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
        lds[at(lds::b_row_major_piece(stage, thread, piece) + v)] = held[v][piece];
      }
    }
  }
}

void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col, Instruction instruction) {
  if (instruction == Instruction::mfma_32x32x16_bf16) {
    block_tile_with<layout::Mfma32x32x16>(a, b, c, tile_row, tile_col);
  } else {
    block_tile_with<layout::Mfma32x32x8>(a, b, c, tile_row, tile_col);
  }
}

}  // namespace asynctp::hip::emulation
