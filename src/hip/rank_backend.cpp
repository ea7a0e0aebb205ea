#include "hip/rank_backend.hpp"

#include <memory>
#include <string>

#include "gpu/device_checks.hpp"
#include "hip/device_facts.hpp"
#include "hip/mfma_layout.hpp"

namespace asynctp::hip {

// Every gfx9 GPU HIP reports runs bf16 GEMMs: only the driver and the
// ordinal can be missing.
std::string runtime_unavailable_reason(int device) {
  return gpu::device_unavailable_reason(device);
}

std::unique_ptr<gpu::RankBackend> make_rank_backend(int device) {
  return std::make_unique<hip::HipRankBackend>(device);
}

gpu::BackendChoice hip_choice(const HipDeviceFacts& facts, const core::ProblemDesc& problem) {
  gpu::BackendChoice out;
  out.caps = hip_caps(facts, problem);
  if (out.caps.native_supported) {
    out.kernel = gpu::NativeKernel{kNativeKernelName, layout::BlockTile::m};
  }
  return out;
}

HipRankBackend::HipRankBackend(int device) : device_(device), facts_(query_device_facts(device)) {}

gpu::BackendChoice HipRankBackend::choose(const core::ProblemDesc& problem,
                                          const core::ResolvedOptions& /*options*/) const {
  // One kernel tile (256 x 256): the planner refuses other forced tiles.
  return hip_choice(facts_, problem);
}

void HipRankBackend::launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                                   const std::uint32_t* flags) {
  if (!native_) native_ = query_native_device();
  hip::launch_native(call, res, flags, *native_);
}

gpu::LibraryGemm* HipRankBackend::library_gemm(int lane) noexcept {
#if defined(ASYNCTP_HAVE_HIPBLAS)
  return lane == 0 || lane == 1 ? &hipblas_[lane] : nullptr;
#else
  (void)lane;
  return nullptr;
#endif
}

std::string HipRankBackend::native_error_message(const std::uint32_t words[3],
                                                 std::uint64_t timeout_ns) const {
  return hip::native_error_message(words, timeout_ns);
}

}  // namespace asynctp::hip
