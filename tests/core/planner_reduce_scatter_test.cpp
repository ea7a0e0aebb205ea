// The planner's rules for matmul + reduce-scatter: the same rules as the
// all-gather op's (native where the backend has it and a tile never
// straddles two chunks; pipelined or decomposed otherwise; forcing what
// cannot run is an error naming why), in the reduce-scatter's words.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/planner.hpp"
#include "support/printers.hpp"

namespace asynctp::core {
namespace {

BackendCaps caps() {
  BackendCaps c;
  c.name = "testdev";
  c.native_supported = true;
  c.default_tile_m = 256;
  c.default_tile_n = 256;
  c.min_pipelined_chunk_rows = 128;
  return c;
}

// m: the rows each rank receives (M / W).
ProblemDesc rs(int world, std::int64_t m, std::int64_t n, std::int64_t k,
               DType dtype = DType::bf16) {
  ProblemDesc p;
  p.op = OpKind::matmul_reduce_scatter;
  p.world_size = world;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = dtype;
  return p;
}

ResolvedOptions forced(Algorithm a) {
  ResolvedOptions o;
  o.algorithm = a;
  o.algorithm_forced = true;
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PlannerReduceScatter, AutoPicksNativeWhenItFits) {
  const Plan p = plan(rs(8, 512, 8192, 1024), caps(), {});
  EXPECT_EQ(p.algorithm, Algorithm::native);
  EXPECT_EQ(p.tile_m, 256);
  EXPECT_TRUE(contains(p.reason, "rows per chunk (M/W = 512) is a multiple of tile M 256"))
      << p.reason;
}

TEST(PlannerReduceScatter, OneRankGetsDecomposed) {
  const Plan p = plan(rs(1, 512, 256, 128), caps(), {});
  EXPECT_EQ(p.algorithm, Algorithm::decomposed);
  EXPECT_TRUE(contains(p.reason, "one rank has nothing to overlap")) << p.reason;
  EXPECT_TRUE(contains(p.reason, "reduction pass")) << p.reason;
}

struct Fallback {
  const char* what;
  ProblemDesc problem;
  Algorithm expected;
  const char* blocker;
  const char* why;
};

TEST(PlannerReduceScatter, FallbacksNameTheBlockerAndForcingNativeIsAnError) {
  const std::vector<Fallback> fallbacks = {
      {"chunk rows off the tile grid", rs(4, 300, 256, 128), Algorithm::pipelined,
       "rows per chunk (M/W = 300) is not a multiple of the native tile M (256)",
       "overlap the shipping of finished partials"},
      {"small chunks", rs(4, 100, 256, 128), Algorithm::decomposed,
       "rows per chunk (M/W = 100)", "chunks of 100 rows are below 128"},
      {"fp16", rs(4, 512, 256, 128, DType::fp16), Algorithm::pipelined,
       "native needs bf16, got fp16", "overlap the shipping"},
      {"n not a multiple of 8", rs(4, 512, 260, 128), Algorithm::pipelined,
       "n (260) is not a multiple of 8", "overlap the shipping"},
      {"k-slice not a multiple of 8", rs(4, 512, 256, 130), Algorithm::pipelined,
       "k (130) is not a multiple of 8", "overlap the shipping"},
      {"partial product over 32 bits", rs(8, std::int64_t{1} << 20, 512, 16),
       Algorithm::pipelined, "the partial product (M x n)", "overlap the shipping"},
  };
  for (const Fallback& f : fallbacks) {
    SCOPED_TRACE(f.what);
    const Plan p = plan(f.problem, caps(), {});
    EXPECT_EQ(p.algorithm, f.expected) << p.reason;
    EXPECT_TRUE(contains(p.reason, "native unavailable")) << p.reason;
    EXPECT_TRUE(contains(p.reason, f.blocker)) << p.reason;
    EXPECT_TRUE(contains(p.reason, f.why)) << p.reason;
    try {
      (void)plan(f.problem, caps(), forced(Algorithm::native));
      ADD_FAILURE() << "forced native accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_TRUE(contains(e.what(), "native was forced but cannot run")) << e.what();
      EXPECT_TRUE(contains(e.what(), f.blocker)) << e.what();
    }
    for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
      EXPECT_EQ(plan(f.problem, caps(), forced(a)).algorithm, a);
    }
  }
}

TEST(PlannerReduceScatter, BackendWithoutANativeReduceScatterKernel) {
  // A backend reports, per problem, whether it has a native kernel for it.
  BackendCaps c = caps();
  c.native_supported = false;
  c.native_unsupported_reason = "no tile-completion epilogue yet";
  const Plan p = plan(rs(4, 512, 256, 128), c, {});
  EXPECT_EQ(p.algorithm, Algorithm::pipelined);
  EXPECT_TRUE(contains(p.reason, "no tile-completion epilogue yet")) << p.reason;
  c.overlap_unprofitable_reason = "too few tiles";
  EXPECT_TRUE(contains(plan(rs(4, 512, 256, 128), c, {}).reason, "before the reduce-scatter"));
}

}  // namespace
}  // namespace asynctp::core
