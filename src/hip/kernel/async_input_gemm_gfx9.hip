// The native async-input GEMM for AMD CDNA3, first version: correct, simple,
// not yet fast. A persistent grid walks the output tiles (256 x 256, the
// reference's tile) in arrival order: the pivot chunk's tiles first, then the
// next chunk's, wrapping around (core::TileSchedule's order). Before a tile's
// first load, one lane of every wave acquires the chunk's flag (system scope:
// the writer is a copy engine or a peer), sleeping between polls, bounded by
// a timeout that records the chunk and gives up. Each of the workgroup's 4
// waves computes 128 x 128 outputs as 4 x 4 blocks of the 32x32x8 bf16 matrix
// instruction, operands loaded straight from global memory through the layout
// functions of mfma_layout.hpp (the same ones the CPU emulation tests), and
// writes bf16 rounded to nearest even. Next versions: LDS staging and double
// buffering (the reference's pipeline), then the measured tile choice.
//
// Grid: the caller sizes it with layout::persistent_grid (a CU per shader
// engine left free for the signal writes and copies HIP runs as kernels).
#include <hip/hip_runtime.h>

#include "hip/async_input_gemm.hpp"
#include "hip/launch.hpp"
#include "hip/mfma_layout.hpp"

namespace asynctp::hip {
namespace {

using layout::BlockTile;
using layout::RowCol;

typedef short bf16x4 __attribute__((ext_vector_type(4)));
typedef float floatx16 __attribute__((ext_vector_type(16)));

#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || \
    defined(__gfx950__)
#define ASYNCTP_HAVE_MFMA_BF16_1K 1
#endif

__device__ short load_bf16(const std::uint16_t* base, std::int64_t row, std::int64_t col,
                           std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                           std::int64_t col_stride) {
  if (row >= rows || col >= cols) return 0;  // zero fill past the edges
  return static_cast<short>(base[row * row_stride + col * col_stride]);
}

// A constant-rate clock (100 MHz on CDNA; its rate is
// hipDeviceAttributeWallClockRate): s_memrealtime, which every gfx9 GPU has
// and older HIP headers (5.2) do not wrap as realtime_ticks().
__device__ std::uint64_t realtime_ticks() {
#if defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_s_memrealtime();
#else
  return 0;  // the host pass only parses device code
#endif
}

// One lane per wave: returns false when the wait gave up (this lane timed
// out, or another wave already recorded a timeout).
__device__ bool wait_for_chunk(const AsyncInputGemmArgs& args, int chunk) {
  const std::uint32_t* flag = args.chunk_flags + chunk;
  std::uint32_t seen = __hip_atomic_load(flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
  if (seen == args.epoch) return true;
  const std::uint64_t start = realtime_ticks();
  while (true) {
    if (__hip_atomic_load(args.error_words, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT) != 0u) {
      return false;
    }
    __builtin_amdgcn_s_sleep(2);
    seen = __hip_atomic_load(flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
    if (seen == args.epoch) return true;
    if (realtime_ticks() - start > args.timeout_ticks) {
      if (atomicCAS(args.error_words, 0u, static_cast<std::uint32_t>(chunk) + 1u) == 0u) {
        atomicExch(args.error_words + 1, seen);
        atomicExch(args.error_words + 2, args.epoch);
      }
      return false;
    }
  }
}

__global__ void __launch_bounds__(BlockTile::waves * layout::kWaveLanes)
    async_input_gemm_kernel(AsyncInputGemmArgs args) {
  const int lane = static_cast<int>(threadIdx.x) % layout::kWaveLanes;
  const int wave = static_cast<int>(threadIdx.x) / layout::kWaveLanes;
  const std::int64_t rows = args.m_per_chunk * args.world_size;
  const std::int64_t m_tiles = args.m_per_chunk / BlockTile::m;  // m_per_chunk % 256 == 0
  const std::int64_t n_tiles = (args.n + BlockTile::n - 1) / BlockTile::n;
  const std::int64_t tiles_per_chunk = m_tiles * n_tiles;
  const std::int64_t total = tiles_per_chunk * args.world_size;

  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int chunk = static_cast<int>((args.pivot + t / tiles_per_chunk) % args.world_size);
    const std::int64_t local = t % tiles_per_chunk;
    const std::int64_t tile_row = chunk * args.m_per_chunk + (local / n_tiles) * BlockTile::m;
    const std::int64_t tile_col = (local % n_tiles) * BlockTile::n;

    int ready = 1;
    if (lane == 0) ready = wait_for_chunk(args, chunk) ? 1 : 0;
    ready = __shfl(ready, 0);
    if (!ready) continue;  // the call failed: finish quickly, the host reports the chunk
    // Lane 0's acquire orders lane 0's loads only: every lane acquires too
    // (system scope: the chunk came from a copy engine or a peer GPU), so no
    // lane reads the chunk's rows from a stale cache line.
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");

    floatx16 acc[BlockTile::blocks_m][BlockTile::blocks_n];
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) acc[bm][bn] = floatx16{};
    }
    for (std::int64_t k0 = 0; k0 < args.k; k0 += layout::kMfmaK) {
      bf16x4 a_items[BlockTile::blocks_m];
      bf16x4 b_items[BlockTile::blocks_n];
      for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
        const RowCol origin = layout::block_origin(wave, bm, 0);
        for (int item = 0; item < layout::kAItems; ++item) {
          const RowCol e = layout::a_element(lane, item);
          a_items[bm][item] = load_bf16(args.a, tile_row + origin.row + e.row, k0 + e.col, rows,
                                        args.k, args.k, 1);
        }
      }
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        const RowCol origin = layout::block_origin(wave, 0, bn);
        for (int item = 0; item < layout::kBItems; ++item) {
          const RowCol e = layout::b_element(lane, item);
          b_items[bn][item] = load_bf16(args.b, k0 + e.row, tile_col + origin.col + e.col, args.k,
                                        args.n, args.b_row_stride, args.b_col_stride);
        }
      }
#if ASYNCTP_HAVE_MFMA_BF16_1K
      for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
        for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
          acc[bm][bn] = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a_items[bm], b_items[bn],
                                                                 acc[bm][bn], 0, 0, 0);
        }
      }
#else
      __builtin_trap();  // built for a GPU without the instruction: never launched there
#endif
    }
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
        const RowCol origin = layout::block_origin(wave, bm, bn);
        for (int item = 0; item < layout::kCItems; ++item) {
          const RowCol e = layout::c_element(lane, item);
          const std::int64_t row = tile_row + origin.row + e.row;
          const std::int64_t col = tile_col + origin.col + e.col;
          if (row < rows && col < args.n) {
            args.c[row * args.n + col] =
                layout::bf16_from_float_bits(__float_as_uint(acc[bm][bn][item]));
          }
        }
      }
    }
  }
}

}  // namespace

hipError_t launch_async_input_gemm(const AsyncInputGemmArgs& args, int grid, hipStream_t stream) {
  hipLaunchKernelGGL(async_input_gemm_kernel, dim3(static_cast<unsigned>(grid)),
                     dim3(BlockTile::waves * layout::kWaveLanes), 0, stream, args);
  return hipGetLastError();
}

}  // namespace asynctp::hip
