// A host emulation of the AMD kernel's inner loops, built from
// mfma_layout.hpp and lds_layout.hpp: one bf16 matrix instruction (32x32x8
// or gfx950's 32x32x16) over 64 emulated lanes, and a whole 256 x 256 block
// tile computed wave by wave and lane by lane the way the kernel does. The
// CPU tests compare it with float64, so the data layout is tested where no
// AMD GPU is.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::hip::emulation {

// The instruction a target's kernel is built on.
enum class Instruction {
  mfma_32x32x8_bf16,   // gfx90a, gfx94x
  mfma_32x32x16_bf16,  // gfx950
};
int instruction_k(Instruction instruction);  // 8 or 16

using LaneOperand = std::array<std::array<std::uint16_t, 8>, 64>;  // bf16 bits; K / 2 used
using LaneC = std::array<std::array<float, 16>, 64>;

// acc += A x B for one instruction, each lane's items read and written
// through the layout functions (fp32 products, summed in k order).
void mfma_32x32_bf16(Instruction instruction, const LaneOperand& a, const LaneOperand& b,
                     LaneC& acc);

// What an LDS slot holds before any thread staged into it: a NaN pattern, so
// a read of an unstaged slot poisons the result.
inline constexpr std::uint16_t kUnstaged = 0x7fc1;

// One K step's staging into stage `stage` of `lds` (both stages,
// lds::kStageElements each; sized when empty; the stage is filled with
// kUnstaged first):
// every one of the 512 emulated threads moves its A and B vectors (zero past
// the matrix edges) through the kernel's own step vectors, a row-major B's
// as the kernel's transposed pieces.
void stage_k_step(const TensorView& a, const TensorView& b, std::int64_t tile_row,
                  std::int64_t tile_col, std::int64_t k0, int stage,
                  std::vector<std::uint16_t>& lds);

// C[tile] = A[tile rows, :] x B[:, tile cols] for the 256 x 256 block tile at
// (tile_row, tile_col) of C, as the kernel computes it with `instruction`:
// K step i is staged in stage i % 2, every wave reads its lanes' 16 k per
// block from it (lds::a_fragment / b_fragment) and issues 4 x 2 blocks x
// (32 / K) emulated instructions on them (MfmaBf16::step_k's order); at the
// end each lane writes its results to C as bf16 (nearest even), clipped at
// C's edges. A: bf16 (M x K, row-major); B: bf16 (K x N, row- or
// column-major); C: bf16 (M x N, row-major).
void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col, Instruction instruction);

}  // namespace asynctp::hip::emulation
