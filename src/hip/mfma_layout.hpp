// Where the AMD kernel's data sits in registers (issue 5): the operand and
// result layouts of the CDNA3 matrix instruction it is built on, and how a
// 256 x 256 x 32 block tile is divided among waves and instructions. Plain
// constexpr functions, so that the HIP kernel and the host emulation
// (mfma_emulation.hpp, tested on the CPU against float64) use the same code:
// the arithmetic is checked here even though the instruction cannot run.
//
// The instruction: v_mfma_f32_32x32x8bf16_1k (__builtin_amdgcn_mfma_f32_
// 32x32x8bf16_1k): one wave of 64 lanes computes D (32 x 32, fp32) = A (32 x
// 8, bf16) x B (8 x 32, bf16) + C. Per lane: 4 bf16 of A, 4 bf16 of B, 16
// fp32 of C/D.
//   A[i][k]  is lane i + 32 * (k / 4), item k % 4
//   B[k][j]  is lane j + 32 * (k / 4), item k % 4
//   D[i][j]  is lane j + 32 * ((i / 4) % 2), item 4 * (i / 8) + i % 4
#pragma once

#include <cstdint>

#if defined(__HIPCC__) || defined(__CUDACC__)
#define ASYNCTP_HOST_DEVICE __host__ __device__
#else
#define ASYNCTP_HOST_DEVICE
#endif

namespace asynctp::hip::layout {

inline constexpr int kWaveLanes = 64;
inline constexpr int kMfmaM = 32, kMfmaN = 32, kMfmaK = 8;
inline constexpr int kAItems = 4, kBItems = 4, kCItems = 16;

struct RowCol {
  int row = 0;
  int col = 0;
};

// Which element of the 32 x 8 A operand lane `lane`'s item `item` holds.
ASYNCTP_HOST_DEVICE constexpr RowCol a_element(int lane, int item) {
  return {lane % 32, 4 * (lane / 32) + item};
}

// Which element (k, j) of the 8 x 32 B operand lane `lane`'s item holds.
ASYNCTP_HOST_DEVICE constexpr RowCol b_element(int lane, int item) {
  return {4 * (lane / 32) + item, lane % 32};
}

// Which element of the 32 x 32 result lane `lane`'s item `item` holds.
ASYNCTP_HOST_DEVICE constexpr RowCol c_element(int lane, int item) {
  return {8 * (item / 4) + 4 * (lane / 32) + item % 4, lane % 32};
}

// The block tile: 256 x 256 outputs per workgroup (the reference's tile),
// K in steps of 32; 4 waves in a 2 x 2 grid, each owning 128 x 128 outputs
// as 4 x 4 instruction blocks of 32 x 32, each K step 4 instructions deep.
struct BlockTile {
  static constexpr int m = 256, n = 256, k = 32;
  static constexpr int waves_m = 2, waves_n = 2;
  static constexpr int waves = waves_m * waves_n;
  static constexpr int wave_m = m / waves_m, wave_n = n / waves_n;              // 128 x 128
  static constexpr int blocks_m = wave_m / kMfmaM, blocks_n = wave_n / kMfmaN;  // 4 x 4
  static constexpr int k_steps = k / kMfmaK;                                    // 4
};

// The tile-local row and column of the (bm, bn) instruction block of wave
// `wave` (waves numbered row-major over the 2 x 2 grid).
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
