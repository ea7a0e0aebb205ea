// The HIP backend under the orchestration it shares with CUDA (src/gpu,
// built here against the HIP runtime): its planner view, the shared GEMM
// schedule's refusal without a library GEMM, and the loopback group (the
// same implementation the CUDA tests run on the H200) refusing cleanly where
// no AMD GPU is present.
//
//   HipRankBackend.ChoiceCarriesTheKernelWhereNativeRuns
//       gfx942 with m % 256 == 0: native capable, kernel mfma_bf16_256x256x32
//       with 256-row granularity; gfx90a or m % 256 != 0: no kernel, and the
//       capabilities say why; without hipBLAS the library paths say so.
//   HipRankBackend.SignalPiecesAreWholeTiles
//       the shared signal-piece rule with the kernel's granularity never cuts
//       a 256-row tile.
//   SharedGemmPaths.LibraryLaneAndCaptureReadiness
//       with a backend that has no library GEMM, library_lane refuses naming
//       the path and the backend, and gemm_ready is false except for native;
//       with lanes, readiness follows the lanes' handles.
//   HipLoopback.WithoutADeviceTheGroupIsRefused
//       hip::unavailable_reason says why, a LoopbackGroup throws
//       Error(backend) naming HIP, a bad config is refused first
//       (invalid_argument), HipRankBackend refuses a missing device.
#include "hip/rank_backend.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"
#include "asynctp/hip.hpp"
#include "gpu/call_check.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/rank_backend.hpp"
#include "hip_runtime/amd_devices.hpp"

namespace asynctp {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

core::ProblemDesc problem(std::int64_t m) {
  core::ProblemDesc p;
  p.world_size = 8;
  p.m = m;
  p.n = 4096;
  p.k = 4096;
  p.dtype = DType::bf16;
  return p;
}

TEST(HipRankBackend, ChoiceCarriesTheKernelWhereNativeRuns) {
  const hip::HipDeviceFacts mi300x{"gfx942:sramecc+:xnack-", 304, 4,
                                   hip::library_gemm_unavailable_reason()};
  const gpu::BackendChoice yes = hip::hip_choice(mi300x, problem(1024));
  ASSERT_TRUE(yes.kernel.has_value()) << yes.caps.native_unsupported_reason;
  EXPECT_TRUE(yes.caps.native_supported);
  EXPECT_EQ(hip::kNativeKernelName, yes.kernel->name);
  EXPECT_EQ(256, yes.kernel->m_granularity);

  const gpu::BackendChoice ragged = hip::hip_choice(mi300x, problem(1000));
  EXPECT_FALSE(ragged.kernel.has_value());
  EXPECT_FALSE(ragged.caps.native_unsupported_reason.empty());

  const hip::HipDeviceFacts mi250{"gfx90a:sramecc+:xnack-", 208, 4, ""};
  const gpu::BackendChoice old = hip::hip_choice(mi250, problem(1024));
  EXPECT_FALSE(old.kernel.has_value());
  EXPECT_TRUE(contains(old.caps.native_unsupported_reason, "gfx90a"))
      << old.caps.native_unsupported_reason;

  if (hip::library_gemm_unavailable_reason().empty()) return;  // built with hipBLAS
  EXPECT_TRUE(contains(yes.caps.library_gemm_unavailable_reason, "hipBLAS"))
      << yes.caps.library_gemm_unavailable_reason;
}

TEST(HipRankBackend, SignalPiecesAreWholeTiles) {
  for (std::int64_t m : {256, 512, 1024, 2048, 4096, 8192}) {
    const std::size_t chunk_bytes = static_cast<std::size_t>(m) * 8192 * 2;
    const int pieces = gpu::signal_pieces(m, chunk_bytes, 256);
    EXPECT_EQ(0, (m / pieces) % 256) << "m " << m << " in " << pieces << " pieces";
  }
}

class FakeLane final : public gpu::LibraryGemm {
 public:
  void run(gpu::rt::StreamHandle, const void*, std::int64_t, const TensorView&, void*) override {
    made = true;
  }
  bool ready() const noexcept override { return made; }
  void prepare() override { made = true; }
  bool made = false;
};

// A backend with no device: only what the shared helpers ask of it.
class FakeBackend final : public gpu::RankBackend {
 public:
  explicit FakeBackend(bool with_lanes) : with_lanes_(with_lanes) {}
  DeviceKind device_kind() const noexcept override { return DeviceKind::hip; }
  const char* name() const noexcept override { return "fake"; }
  int device() const noexcept override { return 0; }
  gpu::BackendChoice choose(const core::ProblemDesc&, const core::ResolvedOptions&) const override {
    return {};
  }
  void launch_native(const gpu::CallSpec&, gpu::RankResources&, const std::uint32_t*) override {}
  gpu::LibraryGemm* library_gemm(int lane) noexcept override {
    return with_lanes_ && (lane == 0 || lane == 1) ? &lanes[lane] : nullptr;
  }
  std::string native_error_message(const std::uint32_t*, std::uint64_t) const override {
    return "";
  }
  FakeLane lanes[2];

 private:
  bool with_lanes_;
};

TEST(SharedGemmPaths, LibraryLaneAndCaptureReadiness) {
  FakeBackend none(false);
  for (const char* path : {"pipelined", "decomposed"}) {
    try {
      gpu::library_lane(none, 0, path);
      ADD_FAILURE() << path << " got a library GEMM from a backend without one";
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::unsupported, e.code());
      EXPECT_TRUE(contains(e.what(), std::string(path) + " on fake")) << e.what();
    }
  }
  EXPECT_TRUE(gpu::gemm_ready(none, Algorithm::native));
  EXPECT_FALSE(gpu::gemm_ready(none, Algorithm::decomposed));
  EXPECT_FALSE(gpu::gemm_ready(none, Algorithm::pipelined));

  FakeBackend with(true);
  EXPECT_EQ(&with.lanes[1], &gpu::library_lane(with, 1, "pipelined"));
  EXPECT_FALSE(gpu::gemm_ready(with, Algorithm::decomposed));
  with.lanes[0].made = true;
  EXPECT_TRUE(gpu::gemm_ready(with, Algorithm::decomposed));
  EXPECT_FALSE(gpu::gemm_ready(with, Algorithm::pipelined));  // lane 1 has no handle yet
  with.lanes[1].made = true;
  EXPECT_TRUE(gpu::gemm_ready(with, Algorithm::pipelined));
}

TEST(HipLoopback, WithoutADeviceTheGroupIsRefused) {
  if (amd_devices() > 0) GTEST_SKIP() << "an AMD GPU is present";
  const std::string why = hip::unavailable_reason(0);
  EXPECT_TRUE(contains(why, "HIP")) << why;

  hip::LoopbackConfig bad;
  bad.world_size = 0;
  try {
    hip::LoopbackGroup group(bad);
    ADD_FAILURE() << "world_size 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    EXPECT_TRUE(contains(e.what(), "world_size")) << e.what();
  }

  hip::LoopbackConfig config;
  config.world_size = 2;
  try {
    hip::LoopbackGroup group(config);
    ADD_FAILURE() << "a loopback group was made without an AMD GPU";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code());
    EXPECT_TRUE(contains(e.what(), "HIP device")) << e.what();
    EXPECT_TRUE(contains(e.what(), why)) << e.what();
  }

  try {
    hip::HipRankBackend backend(0);
    ADD_FAILURE() << "a HIP rank backend was made without an AMD GPU";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::backend, e.code());
  }
}

}  // namespace
}  // namespace asynctp
