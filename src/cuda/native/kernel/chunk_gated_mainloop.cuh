// The chunk-gated mainloop: CUTLASS's stock sm90 TMA + GMMA warp-specialized
// collective (as chosen by its CollectiveBuilder) whose producer-side load()
// first acquires the chunk holding the tile's A rows (kGated: the
// all-gather side), stamps the tile's start when the call is traced
// (tile_stamps.cuh; both sides), then calls the stock load(). The consumer
// side (mma) is the stock one, untouched. The reduce-scatter side, whose
// input is all there, uses it ungated for the stamp alone.
//
// The gate runs once per chunk per CTA: the producer warp remembers which
// chunks it has acquired (a 64-bit mask; chunks >= 64 are re-checked whenever
// the chunk changes, which costs one load of a ready flag).
//
// Local rows: a band of A's rows (the rank's own shard, which the kernel
// starts on) may be read where it already is instead of from the gathered A,
// so the kernel need not wait for a copy of it. The band has a TMA descriptor
// of its own, in a second copy of the stock Params (the kernel's parameters
// are __grid_constant__, so the descriptor stays in parameter space, where
// TMA requires it), and its tiles go to the stock load() with that Params and
// their m tile counted from the band's first: the stock loop, unchanged.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

#include "chunk_gate.cuh"
#include "tile_stamps.cuh"

namespace asynctp::cuda::native::kernel {

template <class StockMainloop, bool kGated = true>
struct ChunkGatedMainloop : StockMainloop {
  using Base = StockMainloop;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;

  struct Arguments : Base::Arguments {
    ChunkGateParams gate{};
    TileStampParams stamps{};
    // Rows [local_first_row, local_first_row + local_rows) of A, read from
    // ptr_A_local (row-major, ld = K) instead of ptr_A; both multiples of the
    // tile's M. Null: every row from ptr_A.
    const void* ptr_A_local = nullptr;
    int local_first_row = 0;
    int local_rows = 0;
  };

  struct Params : Base::Params {
    ChunkGateParams gate{};
    TileStampParams stamps{};
    typename Base::Params local{};  // tma_load_a over the local rows
    int local_first_tile_m = 0;
    int local_tiles_m = 0;  // 0: no local rows
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args,
                                        void* workspace) {
    Params params;
    static_cast<typename Base::Params&>(params) =
        Base::to_underlying_arguments(problem_shape, args, workspace);
    params.gate = args.gate;
    params.stamps = args.stamps;
    if (args.ptr_A_local != nullptr && args.local_rows > 0) {
      constexpr int kTileM = cute::size<0>(typename Base::TileShape{});
      typename Base::Arguments local = args;
      local.ptr_A = static_cast<decltype(local.ptr_A)>(args.ptr_A_local);
      // Same strides (row-major A: ld = K; one batch), fewer rows.
      auto shape = problem_shape;
      cute::get<0>(shape) = args.local_rows;
      params.local = Base::to_underlying_arguments(shape, local, workspace);
      params.local_first_tile_m = args.local_first_row / kTileM;
      params.local_tiles_m = args.local_rows / kTileM;
    }
    return params;
  }

  // The kernel prefetches the descriptors it will use; the local one too.
  CUTLASS_DEVICE static void prefetch_tma_descriptors(Params const& params) {
    Base::prefetch_tma_descriptors(params);
    if (params.local_tiles_m > 0) Base::prefetch_tma_descriptors(params.local);
  }

  // Producer perspective: called by the whole producer warp for each output
  // tile; blk_coord = (m tile, n tile, _, l).
  template <class TensorA, class TensorB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline,
                           PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs,
                           BlockCoord const& blk_coord, KTileIterator k_tile_iter, int k_tile_count,
                           int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
#if defined(__CUDA_ARCH__)
    const int m_tile = static_cast<int>(cute::get<0>(blk_coord));
    const int local_tile = m_tile - params.local_first_tile_m;
    const bool local = local_tile >= 0 && local_tile < params.local_tiles_m;
    // The local band is the caller's input, complete before the kernel
    // starts: its tiles pass no gate, and its flags need not be set.
    if constexpr (kGated) {
      if (!local) acquire_chunk_of_tile(params.gate, m_tile);
    }
    // Off: this one uniform branch per tile.
    if (params.stamps.stamps != nullptr && cute::elect_one_sync()) {
      stamp_tile_start(params.stamps, m_tile);
    }
    if (local) {
      // The coordinate tensors in load_inputs count rows from 0: the local
      // descriptor's row r is A's row local_first_row + r.
      const auto local_coord = cute::make_tuple(local_tile, cute::get<1>(blk_coord),
                                                cute::get<2>(blk_coord), cute::get<3>(blk_coord));
      Base::load(params.local, pipeline, smem_pipe_write, load_inputs, local_coord, k_tile_iter,
                 k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
      return;
    }
#endif
    Base::load(params, pipeline, smem_pipe_write, load_inputs, blk_coord, k_tile_iter,
               k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
  }

 private:
#if defined(__CUDA_ARCH__)
  CUTLASS_DEVICE void acquire_chunk_of_tile(ChunkGateParams const& gate, int m_tile) {
    const int chunk = m_tile / gate.tiles_per_chunk_m;
    if (chunk == last_chunk_ || chunk >= gate.num_chunks) return;
    last_chunk_ = chunk;
    const uint64_t bit = chunk < 64 ? (uint64_t(1) << chunk) : 0;
    if (acquired_mask_ & bit) return;
    if (cute::elect_one_sync()) wait_for_chunk(gate, chunk);
    __syncwarp();                // the warp agrees: the chunk is acquired (or given up)
    fence_proxy_async_global();  // every lane: its TMA loads come after the acquire
    acquired_mask_ |= bit;
  }
#endif

  uint64_t acquired_mask_ = 0;
  int last_chunk_ = -1;
};

}  // namespace asynctp::cuda::native::kernel
