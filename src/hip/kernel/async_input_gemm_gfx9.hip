// The native async-input GEMM for AMD CDNA3 (gfx942) and CDNA4 (gfx950):
// C = A x B over a gathered A whose chunks arrive one by one. A persistent
// grid walks the output tiles (256 x 256, the reference's tile) in arrival
// order: the pivot chunk's tiles first, then the next chunk's, wrapping
// around (core::TileSchedule's order). Before a tile's first load, one lane of
// every wave acquires the chunk's flag (system scope: the writer is a copy
// engine or a peer), sleeping between polls, bounded by a timeout that
// records the chunk and gives up; the workgroup then agrees on the outcome,
// so that every wave meets the same barriers.
//
// Per K step of 32 the 512 threads stage A and B in LDS (lds_layout.hpp:
// two stages, swizzled, 64 KiB) and each of the 8 waves computes 128 x 64
// outputs as 4 x 2 blocks of the 32x32 bf16 matrix instruction (32x32x8 on
// gfx90a/gfx94x, 32x32x16 on gfx950; mfma_layout.hpp), its 128 fp32
// accumulators per lane in registers for the whole tile. Two waves share a
// SIMD, so one's LDS reads and barrier waits hide under the other's matrix
// instructions. Per step each wave reads its operands from the step's LDS
// stage, multiplies, then stores the next step (loaded from global memory a
// step earlier) into the other stage and issues the loads of the step
// after: one barrier per step, and a whole step for a global load to land.
// Results are written as bf16 rounded to nearest even. The index arithmetic
// is the functions of mfma_layout.hpp and lds_layout.hpp, which the CPU
// emulation tests; tests/hip/CMakeLists.txt checks the ISA (no spills, no
// scratch, LDS within 64 KiB, the instruction per target, accumulators kept
// in registers across the K loop).
//
// No device library: everything is a builtin (work-item ids, barriers), so
// that the kernel compiles to ISA without one (the check compiles it with
// -nogpulib) and no call forces the calling convention's register saves.
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

// The instruction per target; elsewhere (the host pass, other GPUs) the
// kernel is parsed but never launched (native_rules: gfx942 / gfx950 only).
#if defined(__gfx950__)
#define ASYNCTP_MFMA_K 16
#elif defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define ASYNCTP_MFMA_K 8
#endif
#if defined(ASYNCTP_MFMA_K)
using Mfma = layout::MfmaBf16<ASYNCTP_MFMA_K>;
#else
using Mfma = layout::Mfma32x32x8;
#endif

typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned int u32x2 __attribute__((ext_vector_type(2)));
typedef short bf16x4 __attribute__((ext_vector_type(4)));  // the 32x32x8 operand: bf16 bits
typedef float floatx16 __attribute__((ext_vector_type(16)));
#if ASYNCTP_MFMA_K == 16
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));  // the 32x32x16 operand
#endif

constexpr int kBlocksM = BlockTile::blocks_m, kBlocksN = BlockTile::blocks_n;

__device__ int thread_index() { return static_cast<int>(__builtin_amdgcn_workitem_id_x()); }
__device__ int block_index() { return static_cast<int>(__builtin_amdgcn_workgroup_id_x()); }
__device__ int block_count() {
  return static_cast<int>(__builtin_amdgcn_grid_size_x() / lds::kThreads);
}

// Every wave's LDS stores done, then the workgroup barrier. Global loads
// stay in flight across it (a fenced __syncthreads would wait for them on
// gfx94x, and the K loop keeps the next step's loads in flight); the memory
// clobber keeps the compiler from moving LDS accesses across it.
__device__ void lds_barrier() { asm volatile("s_waitcnt lgkmcnt(0)\n\ts_barrier" ::: "memory"); }

// No instruction moves across this point. The K loop's stores wait for the
// global loads of the step before; placed after the matrix instructions,
// those loads have a whole step to land (the scheduler would otherwise
// hoist the stores, and their waits, to the step's start).
__device__ void keep_order() { __builtin_amdgcn_sched_barrier(0); }

// ---------------------------------------------------------------------------
// The chunk's flag: bounded wait, workgroup agreement.

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

// Lane 0 of every wave waits and votes in LDS (lds::kVoteElement); the tile
// is ready when every wave voted yes. Every wave reads the same votes, so
// all take the same branch: a wave that gave up alone would leave the others
// waiting at the next barrier. The caller puts one more barrier between this
// reading and the next write of the votes.
__device__ bool workgroup_waits_for_chunk(const AsyncInputGemmArgs& args, int chunk, int wave,
                                          int lane, std::uint16_t* lds) {
  int* votes = reinterpret_cast<int*>(lds + lds::kVoteElement);
  if (lane == 0) votes[wave] = wait_for_chunk(args, chunk) ? 1 : 0;
  lds_barrier();
  int all = 1;
#pragma unroll
  for (int w = 0; w < BlockTile::waves; ++w) all &= votes[w];
  return all != 0;
}

// ---------------------------------------------------------------------------
// Global memory -> registers -> LDS (lds_layout.hpp's step vectors).

// One K step of the block tile as this thread's share of it: 2 vectors of A
// and 2 of B, held in registers between the global loads and the LDS
// stores, with whether each lies inside the matrix. Vectors outside are
// zeroed at the store, not at the load, so that nothing waits for a load
// before the store that needs it, a step later.
struct StepVectors {
  u32x4 a[lds::kAVectorsPerThread];
  u32x4 b[lds::kBVectorsPerThread];
  bool a_inside[lds::kAVectorsPerThread];
  bool b_inside[lds::kBVectorsPerThread];
};

// Where this thread's vectors of a tile start (the K step at k0 = 0; step k0
// moves every vector k0 along k): element offsets in 32 bits (native_rules
// keeps every tensor below 2^31 elements), the k of each vector's first bf16,
// and whether its column is inside N. Computed once per tile, so that a K
// step's loads cost an add and a select each, from the operand's base
// address (a scalar register) plus a 32-bit offset.
struct TileLoads {
  int a_line[lds::kAVectorsPerThread];  // row * K
  int a_k[lds::kAVectorsPerThread];
  int b_line[lds::kBVectorsPerThread];  // column * column stride
  int b_k[lds::kBVectorsPerThread];
  bool b_inside[lds::kBVectorsPerThread];
};

template <bool kBRowMajor>
__device__ TileLoads plan_tile_loads(const AsyncInputGemmArgs& args, int thread, int tile_row,
                                     int tile_col) {
  const int k = static_cast<int>(args.k), n = static_cast<int>(args.n);
  TileLoads plan;
#pragma unroll
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    const lds::StepVector sv = lds::a_step_vector(thread, v, tile_row, 0);
    plan.a_line[v] = static_cast<int>(sv.row) * k;  // rows are whole tiles: always inside
    plan.a_k[v] = static_cast<int>(sv.col);
  }
#pragma unroll
  for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
    const lds::StepVector sv = lds::b_step_vector(thread, v, kBRowMajor, tile_col, 0);
    plan.b_line[v] = static_cast<int>(sv.col * args.b_col_stride);
    plan.b_k[v] = static_cast<int>(sv.row);
    plan.b_inside[v] = sv.col < n;
  }
  return plan;
}

// One 16-byte vector (8 bf16) at element `offset` when it lies inside the
// matrix (K and N are multiples of 8: a vector is wholly in or out);
// outside, every lane reads the matrix's first vector instead (stored as
// zeros), so the load is unconditional (no branch in the K loop) and
// touches one line. An unsigned 32-bit byte offset from a uniform base: the
// load's scalar-base form, with no 64-bit address arithmetic per lane.
__device__ u32x4 load_vector(const std::uint16_t* base, unsigned offset, bool inside) {
  const unsigned bytes = inside ? 2u * offset : 0u;
  return *reinterpret_cast<const u32x4*>(reinterpret_cast<const char*>(base) + bytes);
}

// Offsets in unsigned arithmetic: past the matrix (the steps after K) they
// may wrap, and are then not used.
__device__ StepVectors load_k_step(const AsyncInputGemmArgs& args, const TileLoads& plan, int k0) {
  const int k = static_cast<int>(args.k);
  const unsigned b_row_stride = static_cast<unsigned>(args.b_row_stride);
  StepVectors out;
#pragma unroll
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    const int kk = k0 + plan.a_k[v];
    out.a_inside[v] = kk < k;
    const unsigned offset = static_cast<unsigned>(plan.a_line[v]) + static_cast<unsigned>(kk);
    out.a[v] = load_vector(args.a, offset, out.a_inside[v]);
  }
#pragma unroll
  for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
    const int kk = k0 + plan.b_k[v];
    out.b_inside[v] = plan.b_inside[v] && kk < k;
    const unsigned offset =
        static_cast<unsigned>(plan.b_line[v]) + static_cast<unsigned>(kk) * b_row_stride;
    out.b[v] = load_vector(args.b, offset, out.b_inside[v]);
  }
  return out;
}

__device__ u32x4 zero_outside(const u32x4& x, bool inside) {
  return inside ? x : u32x4{0u, 0u, 0u, 0u};
}

// A row-major B's transposed piece c (lds::b_row_major_piece): column c's
// bf16 of the thread's two vectors (two consecutive k), half c % 2 of their
// dword c / 2 each, as one dword.
__device__ unsigned transposed_piece(const u32x4 (&b)[lds::kBVectorsPerThread], int c) {
  static_assert(lds::kBVectorsPerThread == 2, "a piece is one dword of two k");
  const int dword = c / 2;
  return c % 2 == 0 ? (b[0][dword] & 0xffffu) | (b[1][dword] << 16)
                    : (b[0][dword] >> 16) | (b[1][dword] & 0xffff0000u);
}

template <bool kBRowMajor>
__device__ void store_k_step(const StepVectors& in, int thread, int stage, std::uint16_t* lds) {
#pragma unroll
  for (int v = 0; v < lds::kAVectorsPerThread; ++v) {
    const lds::StepVector sv = lds::a_step_vector(thread, v, 0, 0);
    *reinterpret_cast<u32x4*>(lds + lds::a_slot(stage, sv, 0)) =
        zero_outside(in.a[v], in.a_inside[v]);
  }
  if constexpr (kBRowMajor) {
    const u32x4 b[lds::kBVectorsPerThread] = {zero_outside(in.b[0], in.b_inside[0]),
                                              zero_outside(in.b[1], in.b_inside[1])};
#pragma unroll
    for (int c = 0; c < lds::kVector; ++c) {
      *reinterpret_cast<unsigned*>(lds + lds::b_row_major_piece(stage, thread, c)) =
          transposed_piece(b, c);
    }
  } else {
#pragma unroll
    for (int v = 0; v < lds::kBVectorsPerThread; ++v) {
      const lds::StepVector sv = lds::b_step_vector(thread, v, false, 0, 0);
      *reinterpret_cast<u32x4*>(lds + lds::b_slot(stage, sv, 0)) =
          zero_outside(in.b[v], in.b_inside[v]);
    }
  }
}

// ---------------------------------------------------------------------------
// LDS -> registers -> matrix instructions.

// A wave's operands for one K step: per block, the lane's 16 consecutive k
// (BlockTile::lane_k) as two 16-byte halves.
struct Fragments {
  u32x4 a[kBlocksM][2];
  u32x4 b[kBlocksN][2];
};

__device__ Fragments read_fragments(const std::uint16_t* lds, int stage, int wave, int lane) {
  Fragments f;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
#pragma unroll
    for (int bm = 0; bm < kBlocksM; ++bm) {
      f.a[bm][q] = *reinterpret_cast<const u32x4*>(lds + lds::a_fragment(stage, wave, bm, lane, q));
    }
#pragma unroll
    for (int bn = 0; bn < kBlocksN; ++bn) {
      f.b[bn][q] = *reinterpret_cast<const u32x4*>(lds + lds::b_fragment(stage, wave, bn, lane, q));
    }
  }
  return f;
}

// acc += A x B for sub-step `step`: the instruction's items are the lane's
// k items * step .. + items - 1 (MfmaBf16::step_k).
template <int kStep>
__device__ floatx16 mfma(const u32x4 (&a)[2], const u32x4 (&b)[2], const floatx16& acc) {
#if ASYNCTP_MFMA_K == 16
  return __builtin_amdgcn_mfma_f32_32x32x16_bf16(
      __builtin_bit_cast(bf16x8, a[kStep]), __builtin_bit_cast(bf16x8, b[kStep]), acc, 0, 0, 0);
#elif ASYNCTP_MFMA_K == 8
  constexpr int q = kStep / 2, d = 2 * (kStep % 2);
  const u32x2 a_items{a[q][d], a[q][d + 1]}, b_items{b[q][d], b[q][d + 1]};
  return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(
      __builtin_bit_cast(bf16x4, a_items), __builtin_bit_cast(bf16x4, b_items), acc, 0, 0, 0);
#else
  (void)a, (void)b;
  return acc;  // not a target of this kernel: never launched
#endif
}

// Sub-step after sub-step, 16 independent instructions between two that
// accumulate into the same block.
template <int kStep = 0>
__device__ void multiply_k_step(const Fragments& f, floatx16 (&acc)[kBlocksM][kBlocksN]) {
  if constexpr (kStep < Mfma::steps) {
#pragma unroll
    for (int bm = 0; bm < kBlocksM; ++bm) {
#pragma unroll
      for (int bn = 0; bn < kBlocksN; ++bn) {
        acc[bm][bn] = mfma<kStep>(f.a[bm], f.b[bn], acc[bm][bn]);
      }
    }
    multiply_k_step<kStep + 1>(f, acc);
  }
}

// ---------------------------------------------------------------------------
// The kernel.

template <bool kBRowMajor>
__global__ void __launch_bounds__(lds::kThreads) async_input_gemm_kernel(AsyncInputGemmArgs args) {
  __shared__ u32x4 lds_storage[lds::kBytes / sizeof(u32x4)];
  std::uint16_t* const lds = reinterpret_cast<std::uint16_t*>(lds_storage);
  const int thread = thread_index();
  const int lane = thread % layout::kWaveLanes;
  const int wave = thread / layout::kWaveLanes;
  const int m_tiles = static_cast<int>(args.m_per_chunk / BlockTile::m);  // whole tiles
  const int n_tiles = static_cast<int>((args.n + BlockTile::n - 1) / BlockTile::n);
  const int tiles_per_chunk = m_tiles * n_tiles;
  const int total = tiles_per_chunk * args.world_size;
  const int n = static_cast<int>(args.n);
  // K steps, rounded up to even: the loop below runs them in pairs, one per
  // LDS stage; a step past K is zeros.
  const int k_steps = static_cast<int>((args.k + 2 * BlockTile::k - 1) / (2 * BlockTile::k)) * 2;

  for (int t = block_index(); t < total; t += block_count()) {
    const int chunk = (args.pivot + t / tiles_per_chunk) % args.world_size;
    const int local = t % tiles_per_chunk;
    const int tile_row =
        chunk * static_cast<int>(args.m_per_chunk) + (local / n_tiles) * BlockTile::m;
    const int tile_col = (local % n_tiles) * BlockTile::n;

    if (!workgroup_waits_for_chunk(args, chunk, wave, lane, lds)) {
      lds_barrier();  // every wave has read the votes before the next tile's
      continue;       // the call failed: finish quickly, the host reports the chunk
    }
    // Lane 0's acquire orders lane 0's loads only: every lane acquires too
    // (system scope: the chunk came from a copy engine or a peer GPU), so no
    // lane reads the chunk's rows from a stale cache line.
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");

    floatx16 acc[kBlocksM][kBlocksN];
#pragma unroll
    for (int bm = 0; bm < kBlocksM; ++bm) {
#pragma unroll
      for (int bn = 0; bn < kBlocksN; ++bn) acc[bm][bn] = floatx16{};
    }

    // Step 0 into stage 0, step 1 in flight. Then per step: read this
    // step's operands from its stage, multiply, store the next step (loaded
    // one step earlier) into the other stage, load the one after; the
    // barrier orders the stores before the next step's reads, and the reads
    // before the stores a step later. The two waves of a SIMD overlap one's
    // LDS reads and barrier waits with the other's matrix instructions.
    const TileLoads plan = plan_tile_loads<kBRowMajor>(args, thread, tile_row, tile_col);
    StepVectors next = load_k_step(args, plan, 0);
    store_k_step<kBRowMajor>(next, thread, 0, lds);
    next = load_k_step(args, plan, BlockTile::k);
    lds_barrier();  // after it the votes (stage 1) may be overwritten

    for (int step = 0; step < k_steps; step += 2) {
      multiply_k_step(read_fragments(lds, 0, wave, lane), acc);
      keep_order();
      store_k_step<kBRowMajor>(next, thread, 1, lds);
      next = load_k_step(args, plan, (step + 2) * BlockTile::k);
      lds_barrier();

      multiply_k_step(read_fragments(lds, 1, wave, lane), acc);
      keep_order();
      store_k_step<kBRowMajor>(next, thread, 0, lds);
      next = load_k_step(args, plan, (step + 3) * BlockTile::k);
      lds_barrier();
    }

    // Epilogue: bf16, nearest even; columns past N clipped (rows never are:
    // the gathered rows are whole tiles).
#pragma unroll
    for (int bm = 0; bm < kBlocksM; ++bm) {
#pragma unroll
      for (int bn = 0; bn < kBlocksN; ++bn) {
        const RowCol origin = layout::block_origin(wave, bm, bn);
        const int col = tile_col + origin.col + lane % layout::kMfmaN;
        if (col >= n) continue;
#pragma unroll
        for (int item = 0; item < layout::kCItems; ++item) {
          const int row = tile_row + origin.row + layout::c_element(lane, item).row;
          args.c[row * n + col] = layout::bf16_from_float_bits(__float_as_uint(acc[bm][bn][item]));
        }
      }
    }
  }
}

}  // namespace

hipError_t launch_async_input_gemm(const AsyncInputGemmArgs& args, int grid, hipStream_t stream) {
  const dim3 blocks(static_cast<unsigned>(grid)), threads(lds::kThreads);
  if (args.b_col_stride == 1) {
    hipLaunchKernelGGL(async_input_gemm_kernel<true>, blocks, threads, 0, stream, args);
  } else {
    hipLaunchKernelGGL(async_input_gemm_kernel<false>, blocks, threads, 0, stream, args);
  }
  return hipGetLastError();
}

}  // namespace asynctp::hip
