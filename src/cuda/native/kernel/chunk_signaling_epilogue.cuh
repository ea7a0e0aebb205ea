// The chunk-signaling epilogue: CUTLASS's stock sm90 TMA warp-specialized
// epilogue collective (as chosen by its CollectiveBuilder) whose store(),
// after the stock one has issued the tile's TMA stores, waits for them to
// complete and counts the tile toward its chunk (chunk_signal.cuh); the
// chunk's last tile releases the chunk's flag. Then, when the call is traced,
// it stamps the tile's end (tile_stamps.cuh). Everything else (load,
// store_tail, shared storage, the fusion) is the stock one, untouched.
// With kReleases = false (the all-gather side, whose output nobody waits
// for) it only stamps: the stock store, then the stamp of the issued tile.
//
// The cost: the stock epilogue only waits for a store's shared-memory read
// (to reuse the buffer) and lets the global writes drain while the next
// tile's MMAs run; here the issuing warp waits for the last subtile's writes
// too before it starts the next tile (one TMA store's latency per tile, about
// a microsecond, against 9 us and up of MMA for a 128x256 tile at k >= 1024).
#pragma once

#include "chunk_signal.cuh"
#include "tile_stamps.cuh"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace asynctp::cuda::native::kernel {

template <class StockEpilogue, bool kReleases = true>
struct ChunkSignalingEpilogue : StockEpilogue {
  // The stock collective's arguments and params, each with the signal's and
  // the stamps'.
  struct Arguments : StockEpilogue::Arguments {
    ChunkSignalParams signal{};
    TileStampParams stamps{};
  };
  struct Params : StockEpilogue::Params {
    ChunkSignalParams signal{};
    TileStampParams stamps{};
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args,
                                        void* workspace) {
    return {StockEpilogue::to_underlying_arguments(problem_shape, args, workspace), args.signal,
            args.stamps};
  }

  CUTLASS_HOST_DEVICE
  ChunkSignalingEpilogue(Params const& params, typename StockEpilogue::TensorStorage& shared)
      : StockEpilogue(params, shared), signal_(params.signal), stamps_(params.stamps) {}

  // Consumer perspective: called by every MMA thread for each output tile;
  // tile_coord_mnkl = (m tile, n tile, _, l). The stock epilogue issues its
  // TMA stores from warp 0 of the MMA threads.
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma>
  CUTLASS_DEVICE auto store(typename StockEpilogue::LoadPipeline load_pipeline,
                            typename StockEpilogue::LoadPipelineState load_pipe_consumer_state,
                            typename StockEpilogue::StorePipeline store_pipeline,
                            typename StockEpilogue::StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK,
                            TileCoordMNKL tile_coord_mnkl,
                            cute::Tensor<AccEngine, AccLayout> accumulators, TiledMma tiled_mma,
                            int thread_idx, typename StockEpilogue::TensorStorage& shared_tensors,
                            int subtile_idx = -1) {
    auto next = StockEpilogue::store(load_pipeline, load_pipe_consumer_state, store_pipeline,
                                     store_pipe_producer_state, problem_shape_mnkl, tile_shape_MNK,
                                     tile_coord_mnkl, accumulators, tiled_mma, thread_idx,
                                     shared_tensors, subtile_idx);
#if defined(__CUDA_ARCH__)
    const int m_tile = static_cast<int>(cute::get<0>(tile_coord_mnkl));
    if constexpr (kReleases) {
      if (thread_idx / cutlass::NumThreadsPerWarp == 0) {
        wait_bulk_stores_complete();  // each lane its own bulk groups
        __syncwarp();
        if (thread_idx == 0) count_tile_and_release(signal_, m_tile);
      }
    }
    // Off: this one uniform branch per tile (the stamp's null test).
    if (stamps_.stamps != nullptr && thread_idx == 0) stamp_tile_end(stamps_, m_tile);
#endif
    return next;
  }

 private:
  ChunkSignalParams signal_;
  TileStampParams stamps_;
};

}  // namespace asynctp::cuda::native::kernel
