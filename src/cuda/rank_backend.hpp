// The CUDA backend under the shared orchestration (gpu/rank_backend.hpp):
// the chunk-gated CUTLASS kernel for native (sm_90), cuBLAS for pipelined and
// decomposed, one rank's handles. Used by the loopback group and the NCCL
// transport.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/backend_caps.hpp"
#include "cuda/cublas_gemm.hpp"
#include "gpu/rank_backend.hpp"

namespace asynctp::cuda {

class CudaRankBackend final : public gpu::RankBackend {
 public:
  // Queries `device` (Error(backend) when it cannot).
  explicit CudaRankBackend(int device);

  DeviceKind device_kind() const noexcept override { return DeviceKind::cuda; }
  const char* name() const noexcept override { return "cuda"; }
  int device() const noexcept override { return info_.ordinal; }

  gpu::BackendChoice choose(const core::ProblemDesc& problem,
                            const core::ResolvedOptions& options) const override;
  void launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                     const std::uint32_t* flags) override;
  gpu::LibraryGemm* library_gemm(int lane) noexcept override;
  std::string native_error_message(const std::uint32_t words[3],
                                   std::uint64_t timeout_ns) const override;

 private:
  DeviceInfo info_;
  // One cuBLAS handle per pipelined lane (lane 0 also runs decomposed).
  CublasGemm cublas_[2];
};

}  // namespace asynctp::cuda
