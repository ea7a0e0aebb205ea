// The native async-input GEMM for AMD CDNA3/CDNA4, third version (v2: K
// pipelined through registers; v1: LDS staging): correct first, not tuned. A persistent grid walks
// the output tiles (256 x 256, the reference's tile) in arrival order: the pivot chunk's tiles
// first, then the next chunk's, wrapping around (core::TileSchedule's order). Before a tile's first
// load, one lane of every wave acquires the chunk's flag (system scope: the writer is a copy engine
// or a peer), sleeping between polls, bounded by a timeout that records the chunk and gives up; the
// workgroup then agrees on the outcome, so that every thread meets the same barriers. Per K step of
// 32 the 256 threads stage A and B in LDS with 16-byte loads (lds_layout.hpp), and each of the 4
// waves computes 128 x 128 outputs as 4 x 4 blocks of the 32x32x8 bf16 matrix instruction, reading
// its operands from LDS 8 bytes per lane; results are written as bf16 rounded to nearest even. The
// index arithmetic is the functions of mfma_layout.hpp and lds_layout.hpp, which the CPU emulation
// tests. v2 pipelines K through registers: step k+1's global loads are in flight while step k's
// matrix instructions run (bench/NOTES.md, "AMD kernel v2"). Next: measuring, on an AMD GPU.
//
// Grid: the caller sizes it with layout::persistent_grid (a CU per shader
// engine left free for the signal writes and copies HIP runs as kernels).
#include <hip/hip_runtime.h>

#include "hip/async_input_gemm.hpp"
#include "hip/launch.hpp"
#include "hip/lds_layout.hpp"
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

typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));

// One 16-byte vector (8 bf16) of global memory, or zeros when it lies past
// the matrix edge (K and N are multiples of 8: a vector is wholly in or out).
__device__ u32x4 load_vector(const std::uint16_t* at, bool inside) {
  return inside ? *reinterpret_cast<const u32x4*>(at) : u32x4{0u, 0u, 0u, 0u};
}

__device__ std::uint16_t element(const u32x4& v, int i) {
  return static_cast<std::uint16_t>(v[i / 2] >> (16 * (i % 2)));
}

// One K step of the block tile as this thread's share of it: 4 vectors of A
// and 4 of B, held in registers between the global loads and the LDS stores,
// so that the next step's loads are in flight while the current step's
// matrix instructions run.
struct StepVectors {
  u32x4 a[lds::kAVectorsPerThread];
  u32x4 b[lds::kBVectorsPerThread];
};

__device__ StepVectors load_k_step(const AsyncInputGemmArgs& args, std::int64_t rows,
                                   std::int64_t tile_row, std::int64_t tile_col, std::int64_t k0) {
  const int thread = static_cast<int>(threadIdx.x);
  const bool b_row_major = args.b_col_stride == 1;
  StepVectors out;
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    const lds::StepVector sv = lds::a_step_vector(thread, v, tile_row, k0);
    out.a[v] = load_vector(args.a + sv.row * args.k + sv.col, sv.inside(rows, args.k));
  }
  for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
    const lds::StepVector sv = lds::b_step_vector(thread, v, b_row_major, tile_col, k0);
    out.b[v] = load_vector(args.b + sv.row * args.b_row_stride + sv.col * args.b_col_stride,
                           sv.inside(args.k, args.n));
  }
  return out;
}

// One vector into LDS: as it is, or element by element when transposed.
__device__ void store_vector(const lds::StepVector& sv, const u32x4& x, std::uint16_t* stage) {
  if (sv.lds_stride == 1) {
    *reinterpret_cast<u32x4*>(stage + sv.lds_first) = x;
  } else {
    for (int i = 0; i < lds::kVector; ++i) stage[sv.lds_first + i * sv.lds_stride] = element(x, i);
  }
}

// This thread's share of a K step into LDS (lds_layout.hpp): A as [row][k],
// B as [column][k].
__device__ void store_k_step(const AsyncInputGemmArgs& args, std::int64_t tile_row,
                             std::int64_t tile_col, std::int64_t k0, const StepVectors& in,
                             std::uint16_t* stage) {
  const int thread = static_cast<int>(threadIdx.x);
  const bool b_row_major = args.b_col_stride == 1;
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    store_vector(lds::a_step_vector(thread, v, tile_row, k0), in.a[v], stage);
  }
  for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
    store_vector(lds::b_step_vector(thread, v, b_row_major, tile_col, k0), in.b[v], stage);
  }
}

// A constant-rate clock (100 MHz on CDNA; its rate is
// hipDeviceAttributeWallClockRate): s_memrealtime, which every gfx9 GPU has
// and older HIP headers (5.2) do not wrap as realtime_ticks().
__device__ std::uint64_t realtime_ticks() {
#if defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_s_memrealtime();
#else
  return 0;                // the host pass only parses device code
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

__global__ void __launch_bounds__(BlockTile::waves* layout::kWaveLanes)
    async_input_gemm_kernel(AsyncInputGemmArgs args) {
  const int lane = static_cast<int>(threadIdx.x) % layout::kWaveLanes;
  const int wave = static_cast<int>(threadIdx.x) / layout::kWaveLanes;
  const std::int64_t rows = args.m_per_chunk * args.world_size;
  const std::int64_t m_tiles = args.m_per_chunk / BlockTile::m;  // m_per_chunk % 256 == 0
  const std::int64_t n_tiles = (args.n + BlockTile::n - 1) / BlockTile::n;
  const std::int64_t tiles_per_chunk = m_tiles * n_tiles;
  const std::int64_t total = tiles_per_chunk * args.world_size;
  __shared__ std::uint16_t stage[lds::kAElements + lds::kBElements];
  __shared__ int tile_ready;

  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int chunk = static_cast<int>((args.pivot + t / tiles_per_chunk) % args.world_size);
    const std::int64_t local = t % tiles_per_chunk;
    const std::int64_t tile_row = chunk * args.m_per_chunk + (local / n_tiles) * BlockTile::m;
    const std::int64_t tile_col = (local % n_tiles) * BlockTile::n;

    // One lane per wave waits for the chunk; the workgroup then agrees, so
    // that every thread reaches the same barriers (a wave that gave up alone
    // would leave the others waiting at the first one).
    if (threadIdx.x == 0) tile_ready = 1;
    __syncthreads();
    if (lane == 0 && !wait_for_chunk(args, chunk)) tile_ready = 0;
    __syncthreads();
    const bool ready = tile_ready != 0;
    __syncthreads();       // read by all before thread 0 resets it for the next tile
    if (!ready) continue;  // the call failed: finish quickly, the host reports the chunk
    // Lane 0's acquire orders lane 0's loads only: every lane acquires too
    // (system scope: the chunk came from a copy engine or a peer GPU), so no
    // lane reads the chunk's rows from a stale cache line.
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");

    floatx16 acc[BlockTile::blocks_m][BlockTile::blocks_n];
    for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
      for (int bn = 0; bn < BlockTile::blocks_n; ++bn) acc[bm][bn] = floatx16{};
    }
    // Software pipeline over K: step k0 goes from registers into LDS, then
    // step k0 + 32's global loads are issued before step k0's matrix
    // instructions, so their latency hides under the arithmetic (one LDS
    // stage: two would not fit beside the 256 x 256 tile's 64 KiB limit).
    StepVectors next = load_k_step(args, rows, tile_row, tile_col, 0);
    for (std::int64_t k0 = 0; k0 < args.k; k0 += BlockTile::k) {
      __syncthreads();  // every wave is done reading the previous step's stage
      store_k_step(args, tile_row, tile_col, k0, next, stage);
      __syncthreads();  // the whole stage is written
      if (k0 + BlockTile::k < args.k) {
        next = load_k_step(args, rows, tile_row, tile_col, k0 + BlockTile::k);
      }
      for (int step = 0; step < BlockTile::k_steps; ++step) {
        bf16x4 a_items[BlockTile::blocks_m];
        bf16x4 b_items[BlockTile::blocks_n];
        for (int bm = 0; bm < BlockTile::blocks_m; ++bm) {
          a_items[bm] = *reinterpret_cast<const bf16x4*>(stage + lds::a_read(wave, bm, step, lane));
        }
        for (int bn = 0; bn < BlockTile::blocks_n; ++bn) {
          b_items[bn] = *reinterpret_cast<const bf16x4*>(stage + lds::b_read(wave, bn, step, lane));
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
