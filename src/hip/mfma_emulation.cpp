#include "hip/mfma_emulation.hpp"

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

float bf16_value(std::uint16_t bits) { return core::bf16_to_float(bits); }

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

}  // namespace

void mfma_32x32x8_bf16(const LaneA& a, const LaneB& b, LaneC& acc) {
  // Gather the operands through the layout, as the hardware reads them.
  float am[layout::kMfmaM][layout::kMfmaK] = {};
  float bm[layout::kMfmaK][layout::kMfmaN] = {};
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int item = 0; item < layout::kAItems; ++item) {
      const RowCol ea = layout::a_element(lane, item);
      am[ea.row][ea.col] =
          bf16_value(a[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)]);
      const RowCol eb = layout::b_element(lane, item);
      bm[eb.row][eb.col] =
          bf16_value(b[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)]);
    }
  }
  for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
    for (int item = 0; item < layout::kCItems; ++item) {
      const RowCol e = layout::c_element(lane, item);
      float sum = acc[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)];
      for (int k = 0; k < layout::kMfmaK; ++k) sum += am[e.row][k] * bm[k][e.col];
      acc[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] = sum;
    }
  }
}

void stage_k_step(const TensorView& a, const TensorView& b, std::int64_t tile_row,
                  std::int64_t tile_col, std::int64_t k0, std::vector<std::uint16_t>& lds) {
  lds.assign(static_cast<std::size_t>(lds::kAElements + lds::kBElements), kUnstaged);
  const bool b_row_major = b.col_stride == 1;
  const auto put = [&](int offset, std::uint16_t bits) {
    lds[static_cast<std::size_t>(offset)] = bits;
  };
  // Element by element, through the kernel's own step vectors.
  const auto move = [&](const TensorView& t, const lds::StepVector& sv) {
    for (int i = 0; i < lds::kVector; ++i) {
      put(sv.lds_first + i * sv.lds_stride, load_bf16(t, sv.row_of(i), sv.col_of(i)));
    }
  };
  for (int thread = 0; thread < lds::kThreads; ++thread) {
    for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
      move(a, lds::a_step_vector(thread, v, tile_row, k0));
    }
    for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
      move(b, lds::b_step_vector(thread, v, b_row_major, tile_col, k0));
    }
  }
}

void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col) {
  const std::int64_t k_total = a.cols;
  // Each wave's accumulators: 4 x 4 instruction blocks of 64 lanes x 16.
  static thread_local LaneC acc[BlockTile::waves][BlockTile::blocks_m][BlockTile::blocks_n];
  for (auto& wave : acc) {
    for (auto& row : wave) {
      for (LaneC& block : row) {
        for (auto& lane : block) lane.fill(0.0f);
      }
    }
  }
  std::vector<std::uint16_t> stage;
  for (std::int64_t k0 = 0; k0 < k_total; k0 += BlockTile::k) {
    stage_k_step(a, b, tile_row, tile_col, k0, stage);  // then a barrier in the kernel
    const auto read = [&](int offset) { return stage[static_cast<std::size_t>(offset)]; };
    for (int wave = 0; wave < BlockTile::waves; ++wave) {
      for (int step = 0; step < BlockTile::k_steps; ++step) {
        for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
          for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
            LaneA la{};
            LaneB lb{};
            for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
              const int a_at = lds::a_read(wave, bm, step, lane);
              const int b_at = lds::b_read(wave, bn, step, lane);
              for (int item = 0; item < layout::kAItems; ++item) {
                la[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] =
                    read(a_at + item);
                lb[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] =
                    read(b_at + item);
              }
            }
            mfma_32x32x8_bf16(la, lb, acc[wave][bm][bn]);
          }
        }
      }
    }
  }
  for (int wave = 0; wave < BlockTile::waves; ++wave) {
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        const RowCol origin = layout::block_origin(wave, bm, bn);
        for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
          for (int item = 0; item < layout::kCItems; ++item) {
            const RowCol e = layout::c_element(lane, item);
            store_bf16(
                c, tile_row + origin.row + e.row, tile_col + origin.col + e.col,
                acc[wave][bm][bn][static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)]);
          }
        }
      }
    }
  }
}

}  // namespace asynctp::hip::emulation
