// The chunk-ordered persistent tile scheduler.
//
// Derived from CUTLASS's PersistentTileSchedulerSm90 (static persistent: CTA i
// takes linear work units i, i + grid, i + 2 grid, ...). The base walks
// clusters of output tiles in plain raster-along-N order (M-major: all N
// tiles of one M cluster row, then the next row), with its own swizzle off.
// This class remaps each unit it hands out, in cluster units:
//
//   1. group swizzle: groups of `group_m` M-cluster rows are walked together,
//      M fastest then N, so one wave reuses B tiles from L2. Unlike the base's
//      swizzle, no padding tiles are added (the host makes group_m divide the
//      M clusters of one chunk, so a group never straddles two chunks);
//   2. pivot rotation: M cluster rows are rotated by pivot * (clusters per
//      chunk), so the first tiles handed out are the pivot (local) chunk's and
//      the order wraps around through the other chunks.
//
// Waves therefore advance chunk by chunk starting at the pivot, which is the
// order in which the producer makes chunks ready. With `chunks_in_kernel`
// below the number of chunks, the base walks only that many chunks' M
// clusters (from the pivot, wrapping around): the rest, last in the order,
// are left to the caller (the library tail, NativeTail::library). A cluster's CTAs get the
// same remapped cluster tile, and tiles never straddle chunks because
// m_per_chunk is a multiple of tile_m * cluster_m (checked on the host).
#pragma once

#include "cutlass/gemm/kernel/sm90_tile_scheduler.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"

namespace asynctp::cuda::native::kernel {

struct ChunkGatedSchedulerTag {};

class ChunkGatedTileScheduler : public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90 {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;
  using RasterOrder = typename Base::RasterOrder;
  using RasterOrderOptions = typename Base::RasterOrderOptions;

  struct Arguments : Base::Arguments {
    int clusters_per_chunk_m = 1;  // M clusters (tile_m * cluster_m rows) per chunk
    int pivot_chunk = 0;
    int group_m = 1;               // must divide clusters_per_chunk_m
    int num_chunks = 1;
    int chunks_in_kernel = 0;      // the first this many in the order; 0: every chunk
  };

  struct Params : Base::Params {
    int32_t shift_clusters_m = 0;  // pivot_chunk * clusters_per_chunk_m
    int32_t group_m = 1;
    int32_t clusters_m = 0;        // of every chunk (the rotation wraps around these)
  };

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape,
                                        cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1,
                                        uint32_t ktile_start_alignment_count = 1u) {
    typename Base::Arguments base_args;
    base_args.max_swizzle_size = 1;  // the base pads M and N up to its swizzle: keep it off
    base_args.raster_order = RasterOrderOptions::AlongN;
    // The base's work: the M clusters of the chunks the kernel runs (the
    // mainloop and epilogue keep the whole problem's shape for addressing).
    const int rows_per_cluster = static_cast<int>(cute::size<0>(tile_shape)) *
                                 static_cast<int>(cute::size<0>(cluster_shape));
    auto walked = problem_shape_mnkl;
    if (args.chunks_in_kernel > 0 && args.chunks_in_kernel < args.num_chunks) {
      cute::get<0>(walked) = args.chunks_in_kernel * args.clusters_per_chunk_m * rows_per_cluster;
    }
    Params params;
    static_cast<typename Base::Params&>(params) = Base::to_underlying_arguments(
        walked, tile_shape, cluster_shape, hw_info, base_args, workspace, epilogue_subtile,
        ktile_start_alignment_count);
    params.shift_clusters_m = args.pivot_chunk * args.clusters_per_chunk_m;
    params.group_m = args.group_m > 0 ? args.group_m : 1;
    params.clusters_m = args.num_chunks * args.clusters_per_chunk_m;
    return params;
  }

  CUTLASS_HOST_DEVICE ChunkGatedTileScheduler() {}

  CUTLASS_DEVICE explicit ChunkGatedTileScheduler(Params const& params)
      : Base(params),
        shift_clusters_m_(params.shift_clusters_m),
        group_m_(params.group_m),
        clusters_m_(params.clusters_m) {}

  // The kernels ask for work through these three; each returns the remapped
  // tile. advance_to_next_work() and is_last_tile() stay the base's (a
  // unit's validity does not depend on the remap).
  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
    return get_current_work();
  }

  CUTLASS_DEVICE WorkTileInfo get_current_work() const {
    return remap(Base::get_current_work());
  }

  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work_tile_info) {
    if (continue_current_work(work_tile_info)) {
      return cute::make_tuple(work_tile_info, true);
    }
    advance_to_next_work();
    return cute::make_tuple(get_current_work(), true);
  }

  template <class TileSchedulerPipeline, class TileSchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work_tile_info, TileSchedulerPipeline&,
                                      TileSchedulerPipelineState) {
    return fetch_next_work(work_tile_info);
  }

 private:
  CUTLASS_DEVICE WorkTileInfo remap(WorkTileInfo work) const {
    if (!work.is_valid()) return work;
    const int32_t cm = static_cast<int32_t>(scheduler_params.cluster_shape_m_);
    const int32_t cn = static_cast<int32_t>(scheduler_params.cluster_shape_n_);
    const int32_t clusters_n = static_cast<int32_t>(scheduler_params.problem_tiles_n_);

    const int32_t m_cluster = work.M_idx / cm, m_in_cluster = work.M_idx - m_cluster * cm;
    const int32_t n_cluster = work.N_idx / cn, n_in_cluster = work.N_idx - n_cluster * cn;

    // The group swizzle. In the base's raster-along-N order the linear cluster
    // index is m_cluster * clusters_n + n_cluster; the groups of group_m rows
    // keep their place, and inside a group the walk becomes M fastest. (32-bit
    // arithmetic: the host caps the cluster tile count below 2^31, and 64-bit
    // division would be a slow call in every warp's path.)
    const int32_t group = m_cluster / group_m_;
    const int32_t in_group = (m_cluster - group * group_m_) * clusters_n + n_cluster;
    const int32_t n_new = in_group / group_m_;
    int32_t m_new = group * group_m_ + (in_group - n_new * group_m_);

    // Pivot rotation over every chunk's clusters (world_size * clusters per
    // chunk, exactly), whichever of them the base walks.
    m_new += shift_clusters_m_;
    if (m_new >= clusters_m_) m_new -= clusters_m_;

    work.M_idx = m_new * cm + m_in_cluster;
    work.N_idx = n_new * cn + n_in_cluster;
    return work;
  }

  int32_t shift_clusters_m_ = 0;
  int32_t group_m_ = 1;
  int32_t clusters_m_ = 0;
};

}  // namespace asynctp::cuda::native::kernel

// Plug the scheduler into CUTLASS's GemmUniversal through its tag.
namespace cutlass::gemm::kernel::detail {

template <class ArchTag, class TileShape, class ClusterShape, uint32_t SchedulerPipelineStageCount>
struct TileSchedulerSelector<asynctp::cuda::native::kernel::ChunkGatedSchedulerTag, ArchTag,
                             TileShape, ClusterShape, SchedulerPipelineStageCount> {
  using Scheduler = asynctp::cuda::native::kernel::ChunkGatedTileScheduler;
};

}  // namespace cutlass::gemm::kernel::detail
