// The CUDA backend under the shared orchestration (gpu/rank_backend.hpp):
// the planner's facts about its device and kernels, the chunk-gated CUTLASS
// kernel for native (sm_90), cuBLAS for pipelined and decomposed, one rank's
// handles. Used by the loopback group and the NCCL transport. The native
// kernel has two sides (native/async_input_gemm.hpp, ChunkSync): the
// all-gather's gated input and the reduce-scatter's signalled output.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/config.hpp"
#include "core/planner.hpp"
#include "core/problem.hpp"
#include "cuda/cublas_gemm.hpp"
#include "gpu/rank_backend.hpp"

namespace asynctp::cuda {

struct DeviceInfo {
  int ordinal = 0;
  int major = 0, minor = 0;
  int sm_count = 0;
  std::string name;  // "NVIDIA H200": picks the planner's cost table
  // CUDA_DEVICE_MAX_CONNECTIONS=1: every stream of the process shares one
  // hardware queue, so the producer's copies cannot run beside the GEMM.
  bool single_hardware_queue = false;
};

// Queries the current device. Throws Error(backend) when it cannot.
DeviceInfo query_device(int ordinal);

// The planner's facts for `problem` on `device` (the device must be
// current): sm_90 or not, its SMs, its hardware queues, and the native
// kernel's configs with what each makes of the problem. core::plan decides.
core::BackendCaps cuda_caps(const DeviceInfo& device, const core::ProblemDesc& problem);

// "" when `device` can run asynctp's GPU paths on this runtime, else why not.
std::string runtime_unavailable_reason(int device);
// Rank state on `device`; throws Error(backend) when it cannot be used.
std::unique_ptr<gpu::RankBackend> make_rank_backend(int device);

class CudaRankBackend final : public gpu::RankBackend {
 public:
  // Queries `device` (Error(backend) when it cannot).
  explicit CudaRankBackend(int device);

  DeviceKind device_kind() const noexcept override { return DeviceKind::cuda; }
  const char* name() const noexcept override { return "cuda"; }
  int device() const noexcept override { return info_.ordinal; }

  gpu::BackendChoice choose(const core::ProblemDesc& problem,
                            const core::ResolvedOptions& options) const override;
  bool native_reads_local_shard() const noexcept override { return true; }
  void launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                     const std::uint32_t* flags) override;
  void launch_native_reduce_scatter(const gpu::NativeReduceScatter& call,
                                    gpu::RankResources& res) override;
  gpu::LibraryGemm* library_gemm(int lane) noexcept override;
  std::string native_error_message(const std::uint32_t words[3],
                                   std::uint64_t timeout_ns) const override;

 private:
  DeviceInfo info_;
  // One cuBLAS handle per pipelined lane (lane 0 also runs decomposed).
  CublasGemm cublas_[2];
};

}  // namespace asynctp::cuda
