// Where the AMD kernel's data sits in registers: the operand and result
// layouts of the bf16 matrix instructions it is built on, and how a
// 256 x 256 x 32 block tile is divided among waves and instructions. Plain
// constexpr functions, so that the HIP kernel and the host emulation
// (mfma_emulation.hpp, tested on the CPU against float64) use the same code:
// the arithmetic is checked here even though the instructions cannot run.
//
// The instructions: one wave of 64 lanes computes D (32 x 32, fp32) =
// A (32 x K, bf16) x B (K x 32, bf16) + C, with
//   K = 8:  v_mfma_f32_32x32x8_bf16 (gfx90a, gfx94x; gfx90a spells it
//           v_mfma_f32_32x32x8bf16_1k), 4 bf16 of A and of B per lane;
//   K = 16: v_mfma_f32_32x32x16_bf16 (gfx950 only), 8 bf16 per lane, twice
//           the work in the same issue time as the K = 8 one on gfx950.
// Each lane holds K / 2 consecutive k of one row of A (one column of B):
//   A[i][k]  is lane i + 32 * (k / (K/2)), item k % (K/2)
//   B[k][j]  is lane j + 32 * (k / (K/2)), item k % (K/2)
//   D[i][j]  is lane j + 32 * ((i / 4) % 2), item 4 * (i / 8) + i % 4   (both)
#pragma once

#include <cstdint>

#if defined(__HIPCC__) || defined(__CUDACC__)
#define ASYNCTP_HOST_DEVICE __host__ __device__
#else
#define ASYNCTP_HOST_DEVICE
#endif

namespace asynctp::hip::layout {

inline constexpr int kWaveLanes = 64;
inline constexpr int kMfmaM = 32, kMfmaN = 32;
inline constexpr int kCItems = 16;  // fp32 of D per lane

struct RowCol {
  int row = 0;
  int col = 0;
};

// The block tile: 256 x 256 outputs per workgroup (the reference's tile),
// K in steps of 32; 8 waves in a 2 x 4 grid, each owning 128 x 64 outputs
// as 4 x 2 instruction blocks of 32 x 32: 128 fp32 accumulators per lane,
// two waves per SIMD (each with half of the 512 registers a SIMD lane has),
// so that one wave's LDS reads and barrier waits hide under the other's
// matrix instructions. (Four waves of 128 x 128 would need all 512
// registers of a lane for one wave, 256 of them accumulators, and hide
// latency only by software pipelining; LLVM 22 spills that.)
struct BlockTile {
  static constexpr int m = 256, n = 256, k = 32;
  static constexpr int waves_m = 2, waves_n = 4;
  static constexpr int waves = waves_m * waves_n;
  static constexpr int wave_m = m / waves_m, wave_n = n / waves_n;              // 128 x 64
  static constexpr int blocks_m = wave_m / kMfmaM, blocks_n = wave_n / kMfmaN;  // 4 x 2
  // Of a K step's 32 k, every lane reads 16 consecutive ones (two 16-byte
  // LDS reads per block): the first 16 for lanes 0-31, the last 16 for
  // lanes 32-63, whatever the instruction.
  static constexpr int lane_k = k / 2;
};

// One bf16 instruction, K = 8 or 16.
template <int K>
struct MfmaBf16 {
  static_assert(K == 8 || K == 16, "v_mfma_f32_32x32x8_bf16 or v_mfma_f32_32x32x16_bf16");
  static constexpr int k = K;
  static constexpr int items = K / 2;             // bf16 of A, and of B, per lane
  static constexpr int steps = BlockTile::k / K;  // instructions per block per K step: 4 or 2
  static_assert(items * steps == BlockTile::lane_k);

  // Which element (i, k) of the 32 x K A operand lane `lane`'s item holds.
  ASYNCTP_HOST_DEVICE static constexpr RowCol a_element(int lane, int item) {
    return {lane % 32, items * (lane / 32) + item};
  }
  // Which element (k, j) of the K x 32 B operand lane `lane`'s item holds.
  ASYNCTP_HOST_DEVICE static constexpr RowCol b_element(int lane, int item) {
    return {items * (lane / 32) + item, lane % 32};
  }
  // The K step's k (0..31) that the instruction issued at sub-step `step`
  // (0 .. steps-1) uses as its k `kk`: the instruction's k may be any
  // permutation of the step's, as long as A and B agree (the products summed
  // are the same), and this one lets a lane's items for all sub-steps be the
  // 16 consecutive k it reads from LDS (BlockTile::lane_k): lane half h, item
  // j of sub-step s is step k 16 h + items s + j.
  ASYNCTP_HOST_DEVICE static constexpr int step_k(int step, int kk) {
    return BlockTile::lane_k * (kk / items) + items * step + kk % items;
  }
};

using Mfma32x32x8 = MfmaBf16<8>;
using Mfma32x32x16 = MfmaBf16<16>;

// Which element of the 32 x 32 result lane `lane`'s item `item` holds.
ASYNCTP_HOST_DEVICE constexpr RowCol c_element(int lane, int item) {
  return {8 * (item / 4) + 4 * (lane / 32) + item % 4, lane % 32};
}

// The tile-local row and column of the (bm, bn) instruction block of wave
// `wave` (waves numbered row-major over the 2 x 4 grid).
ASYNCTP_HOST_DEVICE constexpr RowCol block_origin(int wave, int bm, int bn) {
  return {(wave / BlockTile::waves_n) * BlockTile::wave_m + bm * kMfmaM,
          (wave % BlockTile::waves_n) * BlockTile::wave_n + bn * kMfmaN};
}

// The persistent grid, as the reference sizes it: enough workgroups for
// `occupancy` per compute unit on all but one CU of every shader engine, so
// that the signal writes and small copies HIP runs as kernels always find a
// free CU beside the persistent GEMM (they would otherwise wait behind it,
// and it behind them: a deadlock).
ASYNCTP_HOST_DEVICE constexpr int persistent_grid(int occupancy, int cus_per_shader_engine,
                                                  int shader_engines) {
  return occupancy * (cus_per_shader_engine - 1) * shader_engines;
}

// bf16 from fp32, rounded to nearest even (NaN stays NaN), as the kernel's
// epilogue writes C.
ASYNCTP_HOST_DEVICE constexpr std::uint16_t bf16_from_float_bits(std::uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

}  // namespace asynctp::hip::layout
