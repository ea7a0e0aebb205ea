#include "hip/gemm_paths.hpp"

#include <hip/hip_version.h>

#include <memory>
#include <string>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "hip/device_topology.hpp"
#include "hip/launch.hpp"
#include "hip/mfma_layout.hpp"
#include "hip/native_rules.hpp"

#if defined(ASYNCTP_HAVE_HIPBLAS)
#include <hipblas/hipblas.h>
#endif

namespace asynctp::hip {
namespace {

void wait(gpu::rt::StreamHandle stream, gpu::rt::EventHandle event, const char* what) {
  gpu::check(gpu::rt::stream_wait_event(stream, event), what);
}

void* c_rows(const gpu::CallSpec& call, int chunk) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(call.problem.n) * element_size(call.problem.dtype);
  return static_cast<char*>(call.c_out.data) +
         row_bytes * static_cast<std::size_t>(call.problem.m) * static_cast<std::size_t>(chunk);
}

#if defined(ASYNCTP_HAVE_HIPBLAS)
// Never compiled in CI (Debian 12 ships no hipBLAS): the row-major product as
// the column-major C^T = B^T A^T, as the CUDA backend's cuBLAS path does.
class HipblasLane {
 public:
  ~HipblasLane() {
    if (handle_) (void)hipblasDestroy(handle_);
  }
  void run(hipStream_t stream, const void* a, std::int64_t rows, const TensorView& b, void* c) {
    if (!handle_ && hipblasCreate(&handle_) != HIPBLAS_STATUS_SUCCESS) {
      throw Error(ErrorCode::backend, "hipBLAS hipblasCreate failed");
    }
    (void)hipblasSetStream(handle_, stream);
    const int n = static_cast<int>(b.cols), k = static_cast<int>(b.rows);
    const bool b_row_major = b.is_row_major();
    const float alpha = 1.0f, beta = 0.0f;
    const hipblasStatus_t s = hipblasGemmEx(
        handle_, b_row_major ? HIPBLAS_OP_N : HIPBLAS_OP_T, HIPBLAS_OP_N, n, static_cast<int>(rows),
        k, &alpha, b.data, HIPBLAS_R_16B, b_row_major ? n : k, a, HIPBLAS_R_16B, k, &beta, c,
        HIPBLAS_R_16B, n, HIPBLAS_R_32F, HIPBLAS_GEMM_DEFAULT);
    if (s != HIPBLAS_STATUS_SUCCESS) {
      throw Error(ErrorCode::backend, "hipBLAS hipblasGemmEx failed with status " +
                                          std::to_string(static_cast<int>(s)));
    }
  }

 private:
  hipblasHandle_t handle_ = nullptr;
};

HipblasLane& lane(int i) {
  thread_local HipblasLane lanes[2];
  return lanes[i];
}
#endif

}  // namespace

void require_library_gemm(const char* path) {
  const std::string why = library_gemm_unavailable_reason();
  if (!why.empty()) throw Error(ErrorCode::unsupported, std::string(path) + " on HIP: " + why);
}

std::string library_gemm_unavailable_reason() {
#if defined(ASYNCTP_HAVE_HIPBLAS)
  return "";
#else
  return "this build has no hipBLAS (not found at build time; ROCm's hipblas package provides "
         "it); only native runs";
#endif
}

AsyncInputGemmArgs native_args(const gpu::CallSpec& call, const std::uint32_t* flags,
                               std::uint32_t* error_words, std::uint64_t ticks_per_ms) {
  AsyncInputGemmArgs args;
  args.a = static_cast<const std::uint16_t*>(call.gathered);
  args.b = static_cast<const std::uint16_t*>(call.b.data);
  const bool b_row_major = call.problem.b_layout == core::Layout::row_major;
  // Element (kk, j) of the k x n B.
  args.b_row_stride = b_row_major ? call.problem.n : 1;
  args.b_col_stride = b_row_major ? 1 : call.problem.k;
  args.c = static_cast<std::uint16_t*>(call.c_out.data);
  args.m_per_chunk = call.problem.m / call.pieces;
  args.n = call.problem.n;
  args.k = call.problem.k;
  args.world_size = call.problem.world_size * call.pieces;
  args.pivot = call.problem.rank * call.pieces;
  args.chunk_flags = flags;
  args.epoch = call.epoch;
  args.timeout_ticks = static_cast<std::uint64_t>(call.timeout_ms) * ticks_per_ms;
  args.error_words = error_words;
  return args;
}

NativeDevice query_native_device() {
  int device = 0;
  gpu::check(hipGetDevice(&device), "hipGetDevice");
  hipDeviceProp_t props{};
  gpu::check(hipGetDeviceProperties(&props, device), "hipGetDeviceProperties");
  // s_memrealtime's rate: HIP reports it from 5.5 on; before that, the
  // constant 100 MHz of every gfx9 GPU.
  int clock_khz = 100'000;
#if HIP_VERSION_MAJOR > 5 || (HIP_VERSION_MAJOR == 5 && HIP_VERSION_MINOR >= 5)
  gpu::check(hipDeviceGetAttribute(&clock_khz, hipDeviceAttributeWallClockRate, device),
             "hipDeviceGetAttribute(wall clock rate)");
#endif
  const std::string gfx = gfx_target(props.gcnArchName);
  const std::optional<int> grid = native_grid(gfx, props.multiProcessorCount);
  if (!grid || *grid <= 0 || clock_khz <= 0) {
    throw Error(ErrorCode::unsupported, "native on HIP: no persistent-grid rule for " +
                                            std::string(props.gcnArchName) + " with " +
                                            std::to_string(props.multiProcessorCount) + " CUs");
  }
  return {*grid, static_cast<std::uint64_t>(clock_khz)};
}

void HipGemmPaths::launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                                 const std::uint32_t* flags) {
  const AsyncInputGemmArgs args = native_args(
      call, flags, static_cast<std::uint32_t*>(res.error_words.get()), device_.ticks_per_ms);
  // The kernel's tiles never straddle its chunks (the signal pieces): the
  // call's pieces must have been cut with the tile's rows as granularity.
  if (args.m_per_chunk % layout::BlockTile::m != 0) {
    throw Error(ErrorCode::unsupported,
                "native on HIP: signal pieces of " + std::to_string(args.m_per_chunk) +
                    " rows are not a multiple of the kernel's tile M (" +
                    std::to_string(layout::BlockTile::m) + ")");
  }
  gpu::check(launch_async_input_gemm(args, device_.grid, res.compute.get()), "native GEMM launch");
}

void HipGemmPaths::enqueue_pipelined(const gpu::CallSpec& call, gpu::RankResources& res) {
  require_library_gemm("pipelined");
#if defined(ASYNCTP_HAVE_HIPBLAS)
  const gpu::rt::StreamHandle lanes[2] = {res.compute.get(), res.lane2.get()};
  const int world = call.problem.world_size;
  wait(res.lane2.get(), res.fork.get(), "stream wait (fork)");
  for (int i = 0; i < world; ++i) {
    const int c = (call.problem.rank + i) % world;
    if (c != call.problem.rank) {
      wait(lanes[i % 2], res.arrived[static_cast<std::size_t>(c)]->get(),
           "stream wait (chunk arrived)");
    }
    lane(i % 2).run(lanes[i % 2], call.gathered_chunk(c), call.problem.m, call.b, c_rows(call, c));
  }
  gpu::check(gpu::rt::event_record(res.lane2_done.get(), res.lane2.get()),
             "event record (lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "stream wait (lane 2 done)");
#else
  (void)call;
  (void)res;
  (void)&c_rows;
#endif
}

void HipGemmPaths::enqueue_decomposed(const gpu::CallSpec& call, gpu::RankResources& res) {
  require_library_gemm("decomposed");
#if defined(ASYNCTP_HAVE_HIPBLAS)
  const gpu::rt::StreamHandle s = res.compute.get();
  for (int c : call.arrival_order) {
    wait(s, res.arrived[static_cast<std::size_t>(c)]->get(), "stream wait (chunk arrived)");
  }
  lane(0).run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
#else
  (void)call;
  (void)res;
  (void)&wait;
#endif
}

}  // namespace asynctp::hip
