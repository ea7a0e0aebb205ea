// The AMD native kernel's host interface: C = A x B over a gathered A whose
// chunks arrive one by one, on gfx942 / gfx950 (CDNA3 / CDNA4). No HIP
// headers (the CPU tests include it): hip/launch.hpp declares the launch.
//
// State of this code: the kernel (kernel/async_input_gemm_gfx9.hip) is
// compile-checked here for gfx90a and gfx940 with Debian's hipcc 5.2, and
// compiled to ISA for gfx942 and gfx950 with clang-22, whose resource use the
// tests check (no spills, no scratch); its data layout is emulated and tested
// on the CPU (mfma_layout.hpp, lds_layout.hpp); it has never run on AMD
// hardware.
#pragma once

#include <cstdint>

namespace asynctp::hip {

struct AsyncInputGemmArgs {
  const std::uint16_t* a = nullptr;  // bf16, (world_size * m_per_chunk) x k, row-major
  const std::uint16_t* b =
      nullptr;  // bf16, k x n: element (kk, j) at kk * b_row_stride + j * b_col_stride
  std::int64_t b_row_stride = 0, b_col_stride = 0;
  std::uint16_t* c = nullptr;  // bf16, (world_size * m_per_chunk) x n, row-major
  std::int64_t m_per_chunk = 0, n = 0, k = 0;
  int world_size = 1, pivot = 0;
  const std::uint32_t* chunk_flags = nullptr;  // chunk c ready when == epoch
  std::uint32_t epoch = 1;
  std::uint64_t timeout_ticks = 0;       // s_memrealtime ticks (hipDeviceAttributeWallClockRate)
  std::uint32_t* error_words = nullptr;  // [0] 1 + chunk that timed out, [1] flag seen, [2] epoch
};

}  // namespace asynctp::hip
