// The HIP backend's planner hook (src/hip/backend_caps) through core::plan:
// what auto picks and what forcing does on AMD devices, from their facts.
//
//   HipBackendCaps.NativeOnCdna3AndCdna4
//   HipBackendCaps.OtherTargetsFallBackAndForcedNativeSaysWhy
//   HipBackendCaps.UnknownTopologyIsNoNative
//   HipBackendCaps.TooFewHardwareQueuesMeansNoOverlap
//   HipBackendCaps.WithoutHipblasOnlyNative
//   HipBackendCaps.NativeReasonStatesTheDeadlockRule
//   HipBackendCaps.NoNativeReduceScatter
#include "hip/backend_caps.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::hip {
namespace {

core::ProblemDesc problem(int world, std::int64_t m) {
  core::ProblemDesc p;
  p.world_size = world;
  p.m = m;
  p.n = 8192;
  p.k = 8192;
  p.dtype = DType::bf16;
  return p;
}

core::ResolvedOptions forced(Algorithm a) {
  core::ResolvedOptions o;
  o.algorithm = a;
  o.algorithm_forced = a != Algorithm::automatic;
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

HipDeviceFacts mi300x() { return {"gfx942:sramecc+:xnack-", 304, 4, ""}; }

TEST(HipBackendCaps, NativeOnCdna3AndCdna4) {
  for (const HipDeviceFacts& d : {mi300x(), HipDeviceFacts{"gfx950", 256, 4, ""}}) {
    const core::BackendCaps caps = hip_caps(d, problem(8, 1024));
    EXPECT_TRUE(caps.native_supported) << caps.native_unsupported_reason;
    const core::Plan p = core::plan(problem(8, 1024), caps, {});
    EXPECT_EQ(Algorithm::native, p.algorithm) << p.reason;
    EXPECT_EQ(256, p.tile_m);
  }
  // m per rank not a multiple of 256: pipelined, with the tile rule as reason.
  const core::Plan p = core::plan(problem(8, 1000), hip_caps(mi300x(), problem(8, 1000)), {});
  EXPECT_EQ(Algorithm::pipelined, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "multiple of the tile M (256)")) << p.reason;
}

TEST(HipBackendCaps, OtherTargetsFallBackAndForcedNativeSaysWhy) {
  const HipDeviceFacts mi250{"gfx90a:sramecc+:xnack-", 208, 4, ""};
  const core::BackendCaps caps = hip_caps(mi250, problem(8, 1024));
  EXPECT_FALSE(caps.native_supported);
  EXPECT_EQ("hip gfx90a", caps.name);
  const core::Plan p = core::plan(problem(8, 1024), caps, {});
  EXPECT_EQ(Algorithm::pipelined, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "gfx942 and gfx950 only")) << p.reason;
  try {
    (void)core::plan(problem(8, 1024), caps, forced(Algorithm::native));
    ADD_FAILURE() << "native forced on gfx90a";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::unsupported, e.code());
    EXPECT_TRUE(contains(e.what(), "native was forced but cannot run")) << e.what();
    EXPECT_TRUE(contains(e.what(), "gfx90a")) << e.what();
  }
}

TEST(HipBackendCaps, UnknownTopologyIsNoNative) {
  const core::BackendCaps caps = hip_caps({"gfx942", 300, 4, ""}, problem(8, 1024));
  EXPECT_FALSE(caps.native_supported);
  EXPECT_TRUE(contains(caps.native_unsupported_reason, "persistent-grid rule for 300 CUs"))
      << caps.native_unsupported_reason;
}

TEST(HipBackendCaps, TooFewHardwareQueuesMeansNoOverlap) {
  HipDeviceFacts d = mi300x();
  d.hardware_queues = 2;
  const core::BackendCaps caps = hip_caps(d, problem(8, 1024));
  const core::Plan p = core::plan(problem(8, 1024), caps, {});
  EXPECT_EQ(Algorithm::decomposed, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "GPU_MAX_HW_QUEUES")) << p.reason;
  // Forced native still runs: the producer is enqueued first, so it is only slower.
  EXPECT_EQ(Algorithm::native,
            core::plan(problem(8, 1024), caps, forced(Algorithm::native)).algorithm);
}

TEST(HipBackendCaps, WithoutHipblasOnlyNative) {
  HipDeviceFacts d = mi300x();
  d.library_gemm_unavailable = "this build has no hipBLAS";
  EXPECT_EQ(Algorithm::native,
            core::plan(problem(8, 1024), hip_caps(d, problem(8, 1024)), {}).algorithm);
  d.gcn_arch_name = "gfx90a";
  try {
    (void)core::plan(problem(8, 1024), hip_caps(d, problem(8, 1024)), {});
    ADD_FAILURE() << "planned on gfx90a without hipBLAS";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::unsupported, e.code());
    EXPECT_TRUE(contains(e.what(), "gfx942 and gfx950 only")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no hipBLAS")) << e.what();
  }
}

// Whenever native is planned (auto, forced, the only path), the reason says
// the grid leaves a CU per shader engine out and why; when it is not, the
// rule does not apply and is not stated.
TEST(HipBackendCaps, NativeReasonStatesTheDeadlockRule) {
  const std::string rule =
      "one CU per shader engine (32) left out, since HIP runs peer copies and signal writes "
      "as kernels";
  struct Case {
    HipDeviceFacts device;
    std::string grid;
  };
  for (const Case& c :
       {Case{mi300x(), "persistent grid of 272 workgroups on 304 CUs"},
        Case{{"gfx950", 256, 4, ""}, "persistent grid of 224 workgroups on 256 CUs"}}) {
    const core::BackendCaps caps = hip_caps(c.device, problem(8, 1024));
    for (const Algorithm a : {Algorithm::automatic, Algorithm::native}) {
      const core::Plan p = core::plan(problem(8, 1024), caps, forced(a));
      EXPECT_EQ(Algorithm::native, p.algorithm) << p.reason;
      EXPECT_TRUE(contains(p.reason, c.grid)) << p.reason;
      EXPECT_TRUE(contains(p.reason, rule)) << p.reason;
    }
  }
  HipDeviceFacts no_hipblas = mi300x();
  no_hipblas.library_gemm_unavailable = "this build has no hipBLAS";
  const core::Plan only = core::plan(problem(8, 1024), hip_caps(no_hipblas, problem(8, 1024)), {});
  EXPECT_EQ(Algorithm::native, only.algorithm);
  EXPECT_TRUE(contains(only.reason, rule)) << only.reason;
  // Not native: no grid, no rule to state.
  for (const core::Plan& p :
       {core::plan(problem(8, 1000), hip_caps(mi300x(), problem(8, 1000)), {}),
        core::plan(problem(8, 1024), hip_caps(mi300x(), problem(8, 1024)),
                   forced(Algorithm::decomposed))}) {
    EXPECT_NE(Algorithm::native, p.algorithm);
    EXPECT_FALSE(contains(p.reason, "shader engine")) << p.reason;
  }
}

// fused_matmul_reduce_scatter has no AMD native kernel yet: auto falls back
// (pipelined here) and forced native names the missing piece.
TEST(HipBackendCaps, NoNativeReduceScatter) {
  core::ProblemDesc p = problem(8, 1024);
  p.op = core::OpKind::matmul_reduce_scatter;
  const core::BackendCaps caps = hip_caps(mi300x(), p);
  EXPECT_FALSE(caps.native_supported);
  EXPECT_TRUE(contains(caps.native_unsupported_reason, "native reduce-scatter kernel"))
      << caps.native_unsupported_reason;
  EXPECT_EQ(Algorithm::pipelined, core::plan(p, caps, {}).algorithm);
  try {
    (void)core::plan(p, caps, forced(Algorithm::native));
    ADD_FAILURE() << "native forced for the reduce-scatter";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::unsupported, e.code());
    EXPECT_TRUE(contains(e.what(), "is not built yet")) << e.what();
  }
}

}  // namespace
}  // namespace asynctp::hip
