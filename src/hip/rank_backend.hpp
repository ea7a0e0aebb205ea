// The HIP backend under the shared orchestration (gpu/rank_backend.hpp): the
// AMD native kernel on gfx942/gfx950 (native_launch.hpp), hipBLAS for
// pipelined and decomposed where the build has it, the planner's
// capabilities from the device's facts (backend_caps.hpp). Never run on AMD
// hardware: CI compiles and links it; the rules it applies are tested on the
// CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gpu/rank_backend.hpp"
#include "hip/backend_caps.hpp"
#include "hip/hipblas_gemm.hpp"
#include "hip/native_launch.hpp"

namespace asynctp::hip {

// "" when `device` can run asynctp's GPU paths on this runtime, else why not.
std::string runtime_unavailable_reason(int device);
// Rank state on `device`; throws Error(backend) when it cannot be used.
std::unique_ptr<gpu::RankBackend> make_rank_backend(int device);

class HipRankBackend final : public gpu::RankBackend {
 public:
  // Reads `device`'s facts (Error(backend) when there is no such device).
  explicit HipRankBackend(int device);

  DeviceKind device_kind() const noexcept override { return DeviceKind::hip; }
  const char* name() const noexcept override { return "hip"; }
  int device() const noexcept override { return device_; }

  gpu::BackendChoice choose(const core::ProblemDesc& problem,
                            const core::ResolvedOptions& options) const override;
  void launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                     const std::uint32_t* flags) override;
  gpu::LibraryGemm* library_gemm(int lane) noexcept override;
  std::string native_error_message(const std::uint32_t words[3],
                                   std::uint64_t timeout_ns) const override;

 private:
  int device_;
  HipDeviceFacts facts_;
  // Read at the first native launch: only gfx942/gfx950 have a grid rule.
  std::optional<NativeDevice> native_;
#if defined(ASYNCTP_HAVE_HIPBLAS)
  HipblasGemm hipblas_[2];
#endif
};

// The planner's view of the HIP backend for `facts`: hip_caps, and the
// native kernel when it can run the problem.
gpu::BackendChoice hip_choice(const HipDeviceFacts& facts, const core::ProblemDesc& problem);

}  // namespace asynctp::hip
