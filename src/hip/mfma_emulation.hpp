// A host emulation of the AMD kernel's inner loops, built from
// mfma_layout.hpp: one 32x32x8 bf16 matrix instruction over 64 emulated
// lanes, and a whole 256 x 256 block tile computed wave by wave and lane by
// lane the way the kernel will. The CPU tests compare it with float64, so the
// data layout is tested where no AMD GPU is.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::hip::emulation {

using LaneA = std::array<std::array<std::uint16_t, 4>, 64>;  // bf16 bits per lane
using LaneB = std::array<std::array<std::uint16_t, 4>, 64>;
using LaneC = std::array<std::array<float, 16>, 64>;

// acc += A x B for one instruction, each lane's items read and written
// through the layout functions (fp32 products, summed in k order).
void mfma_32x32x8_bf16(const LaneA& a, const LaneB& b, LaneC& acc);

// What an LDS slot holds before any thread staged into it (the padding keeps
// it): a NaN pattern, so a read of an unstaged slot poisons the result.
inline constexpr std::uint16_t kUnstaged = 0x7fc1;

// One K step's staging (lds_layout.hpp): every one of the 256 emulated
// threads moves its A and B vectors (zero past the matrix edges) through the
// kernel's own step vectors (a_step_vector / b_step_vector); `lds` comes
// back holding the whole stage.
void stage_k_step(const TensorView& a, const TensorView& b, std::int64_t tile_row,
                  std::int64_t tile_col, std::int64_t k0, std::vector<std::uint16_t>& lds);

// C[tile] = A[tile rows, :] x B[:, tile cols] for the 256 x 256 block tile at
// (tile_row, tile_col) of C, as the kernel computes it: for each K step of 32
// the threads stage A and B in LDS (stage_k_step), then every wave reads its
// lanes' items from the stage (lds::a_read / b_read) and issues 4 x 4 x 4
// emulated instructions; at the end each lane writes its results to C as
// bf16 (nearest even), clipped at C's edges. A: bf16 (M x K, row-major); B:
// bf16 (K x N, row- or column-major); C: bf16 (M x N, row-major).
void block_tile(const TensorView& a, const TensorView& b, const TensorView& c,
                std::int64_t tile_row, std::int64_t tile_col);

}  // namespace asynctp::hip::emulation
