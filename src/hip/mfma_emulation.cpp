#include "hip/mfma_emulation.hpp"

#include <bit>
#include <cstring>

#include "core/dtype_convert.hpp"
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

void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col) {
  const std::int64_t k_total = a.cols;
  for (int wave = 0; wave < BlockTile::waves; ++wave) {
    // Each wave's accumulators: 4 x 4 instruction blocks of 64 lanes x 16.
    static thread_local LaneC acc[BlockTile::blocks_m][BlockTile::blocks_n];
    for (auto& row : acc) {
      for (LaneC& block : row) {
        for (auto& lane : block) lane.fill(0.0f);
      }
    }
    for (std::int64_t k0 = 0; k0 < k_total; k0 += BlockTile::k) {
      for (int step = 0; step < BlockTile::k_steps; ++step) {
        const std::int64_t k_base = k0 + step * layout::kMfmaK;
        for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
          for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
            const RowCol origin = layout::block_origin(wave, bm, bn);
            LaneA la{};
            LaneB lb{};
            for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
              for (int item = 0; item < layout::kAItems; ++item) {
                const RowCol ea = layout::a_element(lane, item);
                la[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] =
                    load_bf16(a, tile_row + origin.row + ea.row, k_base + ea.col);
                const RowCol eb = layout::b_element(lane, item);
                lb[static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)] =
                    load_bf16(b, k_base + eb.row, tile_col + origin.col + eb.col);
              }
            }
            mfma_32x32x8_bf16(la, lb, acc[bm][bn]);
          }
        }
      }
    }
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        const RowCol origin = layout::block_origin(wave, bm, bn);
        for (int lane = 0; lane < layout::kWaveLanes; ++lane) {
          for (int item = 0; item < layout::kCItems; ++item) {
            const RowCol e = layout::c_element(lane, item);
            store_bf16(c, tile_row + origin.row + e.row, tile_col + origin.col + e.col,
                       acc[bm][bn][static_cast<std::size_t>(lane)][static_cast<std::size_t>(item)]);
          }
        }
      }
    }
  }
}

}  // namespace asynctp::hip::emulation
