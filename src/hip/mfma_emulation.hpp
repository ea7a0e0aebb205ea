// A host emulation of the AMD kernel's inner loops, built from
// mfma_layout.hpp: one 32x32x8 bf16 matrix instruction over 64 emulated
// lanes, and a whole 256 x 256 block tile computed wave by wave and lane by
// lane the way the kernel will. The CPU tests compare it with float64, so the
// data layout is tested where no AMD GPU is.
#pragma once

#include <array>
#include <cstdint>

#include "asynctp/tensor.hpp"

namespace asynctp::hip::emulation {

using LaneA = std::array<std::array<std::uint16_t, 4>, 64>;  // bf16 bits per lane
using LaneB = std::array<std::array<std::uint16_t, 4>, 64>;
using LaneC = std::array<std::array<float, 16>, 64>;

// acc += A x B for one instruction, each lane's items read and written
// through the layout functions (fp32 products, summed in k order).
void mfma_32x32x8_bf16(const LaneA& a, const LaneB& b, LaneC& acc);

// C[tile] = A[tile rows, :] x B[:, tile cols] for the 256 x 256 block tile at
// (tile_row, tile_col) of C, as the kernel computes it: for each K step of 32
// every wave loads its lanes' A and B items (zero past the matrix edges),
// issues 4 x 4 x 4 emulated instructions, and at the end writes its lanes'
// results to C as bf16 (nearest even), clipped at C's edges. A: bf16 (M x K,
// row-major); B: bf16 (K x N, row- or column-major); C: bf16 (M x N, row-major).
void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col);

}  // namespace asynctp::hip::emulation
