// One native-kernel instantiation: CUTLASS's sm90 GemmUniversal composed of
//   - the stock TMA + GMMA warp-specialized mainloop from CUTLASS's
//     CollectiveBuilder, wrapped by ChunkGatedMainloop: for
//     ChunkSync::acquire_input (all-gather) the producer gates on the chunk
//     flag before its TMA loads; on both sides it stamps a traced call's
//     tile starts (tile_stamps.cuh);
//   - the stock TMA warp-specialized epilogue (D = acc, no C operand),
//     wrapped by ChunkSignalingEpilogue: for ChunkSync::release_output
//     (reduce-scatter) a chunk's last stored tile releases its flag; on both
//     sides it stamps a traced call's tile ends;
//   - ChunkGatedTileScheduler (tiles chunk by chunk from the pivot).
// Include this from exactly one .cu per instantiation (instances/*.cu) and
// define it there with ASYNCTP_NATIVE_DEFINE_INSTANCE (all-gather) or
// ASYNCTP_NATIVE_DEFINE_OUTPUT_INSTANCE (reduce-scatter).
#pragma once

// Arch guard: wgmma and setmaxnreg exist only in the sm_90a feature set. A
// plain sm_90 (or any other) device pass would build a kernel without them.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "asynctp native kernel: compile with -gencode arch=compute_90a,code=sm_90a (sm_90a only)"
#endif

// WGMMA N sizes that are not multiples of 32 (and, for bf16, 160 among
// others) are behind this switch; without it a 256x160 tile silently splits
// into five 64x32 instructions per k-step. Must precede every cute include.
#ifndef CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#endif

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/kernel_hardware_info.h"
#include "cutlass/util/packed_stride.hpp"

#include "../async_input_gemm.hpp"
#include "../instance_info.hpp"
#include "chunk_gated_mainloop.cuh"
#include "chunk_gated_scheduler.cuh"
#include "chunk_signaling_epilogue.cuh"

namespace asynctp::cuda::native::kernel {

template <KernelSchedule kSchedule, int kTileM, int kTileN, int kTileK, int kClusterM,
          int kClusterN, bool kBColMajor, ChunkSync kSync = ChunkSync::acquire_input>
struct NativeGemmInstance {
  static constexpr bool kCooperative = kSchedule == KernelSchedule::kCooperative;
  static constexpr bool kReleasesOutput = kSync == ChunkSync::release_output;

  using TileShape = cute::Shape<cute::Int<kTileM>, cute::Int<kTileN>, cute::Int<kTileK>>;
  using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::Int<kClusterN>, cute::_1>;
  using MainloopSchedule =
      std::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                         cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule =
      std::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                         cutlass::epilogue::TmaWarpSpecialized>;

  using Element = cutlass::bfloat16_t;
  using Accumulator = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB =
      std::conditional_t<kBColMajor, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<Element>::value;  // 16 bytes

  using StockEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, Accumulator,
      void, LayoutD, kAlignment,      // no C operand
      Element, LayoutD, kAlignment,   // D
      EpilogueSchedule>::CollectiveOp;

  using StockMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlignment, Element,
      LayoutB, kAlignment, Accumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename StockEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Mainloop = ChunkGatedMainloop<StockMainloop, /*kGated=*/!kReleasesOutput>;
  using CollectiveEpilogue = ChunkSignalingEpilogue<StockEpilogue, /*kReleases=*/kReleasesOutput>;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int>, Mainloop,
                                                          CollectiveEpilogue,
                                                          ChunkGatedSchedulerTag>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  static constexpr int kStages = StockMainloop::DispatchPolicy::Stages;
  static constexpr int kSmemBytes = GemmKernel::SharedStorageSize;
  static constexpr int kClusterSize = kClusterM * kClusterN;

  static typename Gemm::Arguments make_arguments(const NativeGemmArgs& a, int group_m,
                                                 int sm_limit, int max_active_clusters,
                                                 int device) {
    const int m = static_cast<int>(a.world_size * a.m_per_chunk);
    const int n = static_cast<int>(a.n);
    const int k = static_cast<int>(a.k);

    typename Gemm::Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = cute::make_shape(m, n, k);

    args.mainloop.ptr_A = static_cast<const Element*>(a.a);
    args.mainloop.dA = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{},
                                                        cute::make_shape(m, k, 1));
    args.mainloop.ptr_B = static_cast<const Element*>(a.b);
    args.mainloop.dB = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{},
                                                        cute::make_shape(n, k, 1));
    const auto tiles_per_chunk_m = static_cast<int32_t>(a.m_per_chunk / kTileM);
    if constexpr (kReleasesOutput) {
      const auto tiles_n = static_cast<std::uint32_t>((a.n + kTileN - 1) / kTileN);
      args.epilogue.signal.flags = a.done_flags;
      args.epilogue.signal.counters = a.done_counters;
      args.epilogue.signal.epoch = a.epoch;
      args.epilogue.signal.tiles_per_chunk_m = tiles_per_chunk_m;
      args.epilogue.signal.tiles_per_chunk = static_cast<std::uint32_t>(tiles_per_chunk_m) * tiles_n;
      args.epilogue.signal.num_chunks = a.world_size;
    } else {
      args.mainloop.gate.flags = a.chunk_flags;
      args.mainloop.gate.error_words = a.error_words;
      args.mainloop.gate.timeout_ns = a.timeout_ns;
      args.mainloop.gate.epoch = a.epoch;
      args.mainloop.gate.tiles_per_chunk_m = tiles_per_chunk_m;
      args.mainloop.gate.num_chunks = a.world_size;
      if (a.a_local != nullptr) {
        args.mainloop.ptr_A_local = a.a_local;
        args.mainloop.local_first_row = static_cast<int>(a.pivot * a.m_per_chunk);
        args.mainloop.local_rows = static_cast<int>(a.local_chunks * a.m_per_chunk);
      }
    }

    // Null (untraced): the stamps cost a uniform branch per tile in the
    // producer and one in the epilogue.
    args.mainloop.stamps.stamps = reinterpret_cast<unsigned long long*>(a.tile_stamps);
    args.mainloop.stamps.tiles_per_chunk_m = tiles_per_chunk_m;
    args.mainloop.stamps.num_chunks = a.world_size;
    args.epilogue.stamps = args.mainloop.stamps;

    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = 0.0f;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = cutlass::make_cute_packed_stride(typename GemmKernel::StrideC{},
                                                       cute::make_shape(m, n, 1));
    args.epilogue.ptr_D = static_cast<Element*>(a.c);
    args.epilogue.dD = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{},
                                                       cute::make_shape(m, n, 1));

    args.hw_info.device_id = device;
    args.hw_info.sm_count = sm_limit;
    args.hw_info.max_active_clusters = max_active_clusters;

    args.scheduler.clusters_per_chunk_m =
        static_cast<int>(a.m_per_chunk / (int64_t(kTileM) * kClusterM));
    args.scheduler.pivot_chunk = a.pivot;
    args.scheduler.group_m = group_m;
    args.scheduler.num_chunks = a.world_size;
    args.scheduler.chunks_in_kernel = a.chunks_in_kernel;
    return args;
  }

  // Opts the kernel into its dynamic shared memory and asks the occupancy
  // calculator how many clusters fit at once, once per device. The grid is
  // then min(that, sm_limit / cluster size) clusters.
  static cudaError_t max_active_clusters(int device, int* out) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices];  // 0 = not asked yet
    if (device >= 0 && device < kMaxDevices) {
      const int cached = cache[device].load(std::memory_order_relaxed);
      if (cached > 0) {
        *out = cached;
        return cudaSuccess;
      }
    }
    cudaError_t status = cudaFuncSetAttribute(cutlass::device_kernel<GemmKernel>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              kSmemBytes);
    if (status != cudaSuccess) return status;
    int clusters = cutlass::KernelHardwareInfo::query_device_max_active_clusters<GemmKernel>();
    if (clusters <= 0) {
      status = cudaGetLastError();
      return status != cudaSuccess ? status : cudaErrorInvalidConfiguration;
    }
    if (device >= 0 && device < kMaxDevices) cache[device].store(clusters);
    *out = clusters;
    return cudaSuccess;
  }

  static int clusters_for(int device, int sm_limit) {
    int clusters = 0;
    if (max_active_clusters(device, &clusters) != cudaSuccess) return 0;
    const int by_limit = sm_limit / kClusterSize;
    return clusters < by_limit ? clusters : by_limit;
  }

  static int grid(const NativeGemmArgs& a, int group_m, int sm_limit) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 0;
    const int clusters = clusters_for(device, sm_limit);
    if (clusters <= 0) return 0;
    const auto args = make_arguments(a, group_m, sm_limit, clusters, device);
    const dim3 g = Gemm::get_grid_shape(args);
    return static_cast<int>(g.x * g.y * g.z);
  }

  static cudaError_t launch(const NativeGemmArgs& a, int group_m, int sm_limit, void* workspace,
                            cudaStream_t stream) {
    int device = 0;
    cudaError_t status = cudaGetDevice(&device);
    if (status != cudaSuccess) return status;
    int clusters = 0;
    status = max_active_clusters(device, &clusters);
    if (status != cudaSuccess) return status;
    const int by_limit = sm_limit / kClusterSize;
    if (by_limit <= 0) return cudaErrorInvalidValue;
    if (clusters > by_limit) clusters = by_limit;

    const auto args = make_arguments(a, group_m, sm_limit, clusters, device);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return cudaErrorInvalidValue;
    Gemm gemm;
    if (gemm.initialize(args, workspace, stream) != cutlass::Status::kSuccess) {
      status = cudaGetLastError();
      return status != cudaSuccess ? status : cudaErrorInvalidValue;
    }
    if (gemm.run(stream) != cutlass::Status::kSuccess) {
      status = cudaGetLastError();
      return status != cudaSuccess ? status : cudaErrorLaunchFailure;
    }
    return cudaGetLastError();
  }
};

}  // namespace asynctp::cuda::native::kernel

// Defines detail::instance_<id>() for one instantiation (see instances.hpp).
#define ASYNCTP_NATIVE_DEFINE_INSTANCE(id, schedule, tm, tn, tk, cm, cn, b_col_major) \
  ASYNCTP_NATIVE_DEFINE_SYNC_INSTANCE(id, schedule, tm, tn, tk, cm, cn, b_col_major, acquire_input)
#define ASYNCTP_NATIVE_DEFINE_OUTPUT_INSTANCE(id, schedule, tm, tn, tk, cm, cn, b_col_major) \
  ASYNCTP_NATIVE_DEFINE_SYNC_INSTANCE(id, schedule, tm, tn, tk, cm, cn, b_col_major, release_output)
#define ASYNCTP_NATIVE_DEFINE_SYNC_INSTANCE(id, schedule, tm, tn, tk, cm, cn, b_col_major, sync) \
  namespace asynctp::cuda::native::detail {                                                  \
  const InstanceInfo& instance_##id() {                                                      \
    using I = ::asynctp::cuda::native::kernel::NativeGemmInstance<KernelSchedule::schedule,  \
                                                                  tm, tn, tk, cm, cn,        \
                                                                  b_col_major,               \
                                                                  ChunkSync::sync>;          \
    static const InstanceInfo info{#id, KernelSchedule::schedule, tm, tn, tk, cm, cn,       \
                                   b_col_major, I::kStages, I::kSmemBytes, &I::launch,      \
                                   &I::grid};                                                \
    return info;                                                                             \
  }                                                                                          \
  }
