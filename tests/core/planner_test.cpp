// The planner is a pure function (problem, capabilities, options) -> plan,
// for both ops (the reduce-scatter's tests at the end).
// Native only where it can run; otherwise a fallback, always with the reason
// (which must carry the blocker, so `asynctp run` can tell the user why).
// Forcing native where it cannot run is an error naming the blocker.
#include "core/planner.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"
#include "support/plan_inputs.hpp"
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

using test_inputs::forced;
using test_inputs::problem;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Planner, AutoPicksNativeWhenItFits) {
  const Plan p = plan(problem(4, 512, 384, 128), caps(), {});
  EXPECT_EQ(p.algorithm, Algorithm::native);
  EXPECT_EQ(p.tile_m, 256);
  EXPECT_EQ(p.tile_n, 256);
  EXPECT_TRUE(contains(p.reason, "bf16")) << p.reason;
  EXPECT_TRUE(contains(p.reason, "multiple of tile M 256")) << p.reason;
  EXPECT_FALSE(native_blocker(problem(4, 512, 384, 128), caps(), 256, 256).has_value());
  // N need not be a multiple of the N tile: the epilogue clips.
  EXPECT_EQ(plan(problem(2, 256, 264, 8), caps(), {}).algorithm, Algorithm::native);
}

TEST(Planner, OneRankGetsDecomposedEvenWhereNativeFits) {
  const Plan p = plan(problem(1, 512, 256, 128), caps(), {});
  EXPECT_EQ(p.algorithm, Algorithm::decomposed);
  EXPECT_NE(p.reason.find("one rank has nothing to overlap"), std::string::npos) << p.reason;
  // Forcing native still runs it.
  EXPECT_EQ(plan(problem(1, 512, 256, 128), caps(), forced(Algorithm::native)).algorithm,
            Algorithm::native);
}

struct Fallback {
  const char* what;
  ProblemDesc problem;
  Algorithm expected;
  const char* blocker;  // must appear in the reason (and the forced-native error)
  const char* why;      // the fallback's own justification
};

std::vector<Fallback> fallbacks() {
  return {
      {"m not a tile multiple, big chunks", problem(4, 300, 256, 128), Algorithm::pipelined,
       "m per rank (300) is not a multiple of the native tile M (256)", "overlap the copies"},
      {"m not a tile multiple, small chunks", problem(4, 100, 256, 128), Algorithm::decomposed,
       "m per rank (100) is not a multiple of the native tile M (256)",
       "chunks of 100 rows are below 128"},
      {"m not a tile multiple, one rank", problem(1, 300, 256, 128), Algorithm::decomposed,
       "not a multiple of the native tile M", "one rank has nothing to overlap"},
      {"fp16", problem(4, 512, 256, 128, DType::fp16), Algorithm::pipelined,
       "native needs bf16, got fp16", "overlap the copies"},
      {"fp32", problem(2, 512, 256, 128, DType::fp32), Algorithm::pipelined,
       "native needs bf16, got fp32", "overlap the copies"},
      {"fp32 one rank", problem(1, 512, 256, 128, DType::fp32), Algorithm::decomposed,
       "native needs bf16, got fp32", "one rank"},
      {"n not a multiple of 8", problem(4, 512, 260, 128), Algorithm::pipelined,
       "n (260) is not a multiple of 8", "overlap the copies"},
      {"k not a multiple of 8", problem(8, 256, 256, 130), Algorithm::pipelined,
       "k (130) is not a multiple of 8", "overlap the copies"},
      {"32-bit limit", problem(8, std::int64_t{1} << 25, 8, 16), Algorithm::pipelined,
       "2^31 or more elements", "overlap the copies"},
      // m = min_pipelined_chunk_rows exactly is big enough for pipelined.
      {"boundary chunk rows", problem(2, 128, 256, 128, DType::fp16), Algorithm::pipelined,
       "native needs bf16", "overlap the copies"},
      {"just below boundary", problem(2, 127, 256, 128), Algorithm::decomposed, "m per rank (127)",
       "below 128"},
  };
}

TEST(Planner, AutoFallsBackWithTheBlockerInTheReason) {
  for (const Fallback& f : fallbacks()) {
    SCOPED_TRACE(f.what);
    const Plan p = plan(f.problem, caps(), {});
    EXPECT_EQ(p.algorithm, f.expected) << to_string(p.algorithm) << ": " << p.reason;
    EXPECT_EQ(p.tile_m, 0);
    EXPECT_EQ(p.tile_n, 0);
    EXPECT_TRUE(contains(p.reason, "native unavailable")) << p.reason;
    EXPECT_TRUE(contains(p.reason, f.blocker)) << p.reason;
    EXPECT_TRUE(contains(p.reason, f.why)) << p.reason;
    const auto blocker = native_blocker(f.problem, caps(), 256, 256);
    ASSERT_TRUE(blocker.has_value());
    EXPECT_TRUE(contains(*blocker, f.blocker)) << *blocker;
  }
}

TEST(Planner, BackendWithoutNative) {
  BackendCaps c = caps();
  c.native_supported = false;
  c.native_unsupported_reason = "no async-input kernel for sm_80";
  const Plan p = plan(problem(4, 512, 256, 128), c, {});
  EXPECT_EQ(p.algorithm, Algorithm::pipelined);
  EXPECT_TRUE(contains(p.reason, "backend testdev has no native kernel")) << p.reason;
  EXPECT_TRUE(contains(p.reason, "no async-input kernel for sm_80")) << p.reason;
  EXPECT_EQ(plan(problem(4, 64, 256, 128), c, {}).algorithm, Algorithm::decomposed);
  try {
    plan(problem(4, 512, 256, 128), c, forced(Algorithm::native));
    ADD_FAILURE() << "forced native ran on a backend without native";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_TRUE(contains(e.what(), "no async-input kernel for sm_80")) << e.what();
  }
}

TEST(Planner, ForcingNativeWhereItCannotRunIsAnError) {
  for (const Fallback& f : fallbacks()) {
    SCOPED_TRACE(f.what);
    try {
      const Plan p = plan(f.problem, caps(), forced(Algorithm::native));
      ADD_FAILURE() << "forced native accepted: " << to_string(p.algorithm);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
      EXPECT_TRUE(contains(e.what(), "native was forced but cannot run")) << e.what();
      EXPECT_TRUE(contains(e.what(), f.blocker)) << e.what();
    }
  }
}

TEST(Planner, ForcedAlgorithmsRunWhereTheyCan) {
  std::vector<ProblemDesc> problems = {problem(4, 512, 256, 128), problem(1, 8, 8, 8)};
  for (const Fallback& f : fallbacks()) problems.push_back(f.problem);
  for (const ProblemDesc& pr : problems) {
    SCOPED_TRACE(pr.to_string());
    for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
      const Plan p = plan(pr, caps(), forced(a));
      EXPECT_EQ(p.algorithm, a);
      EXPECT_EQ(p.tile_m, 0);
      EXPECT_TRUE(contains(p.reason, "forced")) << p.reason;
    }
  }
  const Plan native = plan(problem(4, 512, 256, 128), caps(), forced(Algorithm::native));
  EXPECT_EQ(native.algorithm, Algorithm::native);
  EXPECT_EQ(native.tile_m, 256);
  EXPECT_TRUE(contains(native.reason, "forced")) << native.reason;
}

TEST(Planner, CustomTilesChangeTheDivisibilityRule) {
  const ProblemDesc p = problem(4, 192, 100 * 8, 64);  // 192 = 3 * 64, not a multiple of 256
  EXPECT_EQ(plan(p, caps(), {}).algorithm, Algorithm::pipelined);
  ResolvedOptions o;
  o.tile_m = 64;
  o.tile_n = 96;
  const Plan with_tiles = plan(p, caps(), o);
  EXPECT_EQ(with_tiles.algorithm, Algorithm::native) << with_tiles.reason;
  EXPECT_EQ(with_tiles.tile_m, 64);
  EXPECT_EQ(with_tiles.tile_n, 96);
  EXPECT_TRUE(contains(with_tiles.reason, "multiple of tile M 64")) << with_tiles.reason;
  // A custom tile that does not divide m blocks native, and the error says so.
  o.tile_m = 128;
  EXPECT_EQ(plan(p, caps(), o).algorithm, Algorithm::pipelined);
  o.algorithm = Algorithm::native;
  try {
    plan(p, caps(), o);
    ADD_FAILURE() << "forced native with tile_m 128 accepted for m 192";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "not a multiple of the native tile M (128)")) << e.what();
  }
  // The backend's default tile rules when options leave it unset.
  BackendCaps small = caps();
  small.default_tile_m = 32;
  small.default_tile_n = 16;
  const Plan p32 = plan(problem(2, 96, 8, 8), small, {});
  EXPECT_EQ(p32.algorithm, Algorithm::native);
  EXPECT_EQ(p32.tile_m, 32);
  EXPECT_EQ(p32.tile_n, 16);
}

TEST(Planner, NoOverlapPossibleMakesAutoDecomposedButForcedStillRuns) {
  BackendCaps c = caps();
  c.no_overlap_reason = "one hardware queue";
  const Plan p = plan(problem(4, 512, 1024, 1024), c, ResolvedOptions{});
  EXPECT_EQ(Algorithm::decomposed, p.algorithm);
  EXPECT_NE(std::string::npos, p.reason.find("one hardware queue")) << p.reason;

  const Plan native = plan(problem(4, 512, 1024, 1024), c, forced(Algorithm::native));
  EXPECT_EQ(Algorithm::native, native.algorithm);
  const Plan piped = plan(problem(4, 512, 1024, 1024), c, forced(Algorithm::pipelined));
  EXPECT_EQ(Algorithm::pipelined, piped.algorithm);
}

TEST(Planner, OverlapThatDoesNotPayMakesAutoDecomposedButForcedStillRuns) {
  BackendCaps c = caps();
  c.overlap_unprofitable_reason = "80 of the 132 SMs busy";
  // Whether native fits (m 512) or not (m 384, where auto would otherwise
  // pipeline), auto runs the one GEMM after the gather and says why.
  for (std::int64_t m : {512, 384}) {
    const Plan p = plan(problem(4, m, 1024, 1024), c, ResolvedOptions{});
    EXPECT_EQ(Algorithm::decomposed, p.algorithm) << m;
    EXPECT_TRUE(contains(p.reason, "overlap does not pay")) << p.reason;
    EXPECT_TRUE(contains(p.reason, "80 of the 132 SMs busy")) << p.reason;
  }
  EXPECT_EQ(Algorithm::pipelined, plan(problem(4, 384, 1024, 1024), caps(), {}).algorithm);
  for (Algorithm a : {Algorithm::native, Algorithm::pipelined}) {
    EXPECT_EQ(a, plan(problem(4, 512, 1024, 1024), c, forced(a)).algorithm) << to_string(a);
  }
  // A build without a library GEMM still has only native.
  c.library_gemm_unavailable_reason = "no hipBLAS";
  EXPECT_EQ(Algorithm::native, plan(problem(4, 512, 1024, 1024), c, {}).algorithm);
}

TEST(Planner, WithoutALibraryGemmOnlyNativeRuns) {
  BackendCaps c = caps();
  c.library_gemm_unavailable_reason = "this build has no hipBLAS";
  // Auto takes native wherever it fits, even where it would otherwise pick
  // decomposed (one rank, one hardware queue), and says why.
  for (int world : {1, 4}) {
    const Plan p = plan(problem(world, 512, 1024, 1024), c, ResolvedOptions{});
    EXPECT_EQ(Algorithm::native, p.algorithm) << world;
    EXPECT_TRUE(contains(p.reason, "the only path this build has")) << p.reason;
    EXPECT_TRUE(contains(p.reason, "no hipBLAS")) << p.reason;
  }
  BackendCaps queue = c;
  queue.no_overlap_reason = "one hardware queue";
  EXPECT_EQ(Algorithm::native, plan(problem(4, 512, 1024, 1024), queue, {}).algorithm);

  // Where native cannot run, nothing can: the error names both reasons.
  try {
    (void)plan(problem(4, 300, 1024, 1024), c, ResolvedOptions{});
    ADD_FAILURE() << "planned a problem no path can run";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::unsupported, e.code());
    EXPECT_TRUE(contains(e.what(), "no algorithm can run")) << e.what();
    EXPECT_TRUE(contains(e.what(), "m per rank (300)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no hipBLAS")) << e.what();
  }
  // Forcing a library path is an error naming it and the reason.
  for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
    try {
      (void)plan(problem(4, 512, 1024, 1024), c, forced(a));
      ADD_FAILURE() << to_string(a) << " planned without a library GEMM";
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::unsupported, e.code());
      EXPECT_TRUE(contains(e.what(),
                           std::string("algorithm ") + to_string(a) + " was forced but cannot run"))
          << e.what();
      EXPECT_TRUE(contains(e.what(), "no hipBLAS")) << e.what();
    }
  }
  EXPECT_EQ(Algorithm::native,
            plan(problem(4, 512, 1024, 1024), c, forced(Algorithm::native)).algorithm);
}

// The facts a GPU backend reports (its native configs, SMs, hardware
// queues) and a transport's peer access: every decision from them is made
// by core::plan.
const auto config = test_inputs::native_config;

BackendCaps gpu_facts() {
  BackendCaps c = caps();
  c.sm_count = 132;
  c.native_configs = {config("coop_256x160", 512, 256, 160, 1.00, 132),
                      config("coop_128x256", 256, 128, 256, 1.00, 132),
                      config("pp_128x128", 256, 128, 128, 0.95, 132)};
  return c;
}

TEST(PlannerFacts, ChoosesTheConfigOfLeastPredictedTimeAndNamesIt) {
  // N 7168 = 28 tiles of 256 or 44.8 of 160: at M 8 x 1024, the 256x160
  // config fills whole waves better.
  const Plan wide = plan(problem(8, 1024, 7168, 4096), gpu_facts(), {});
  EXPECT_EQ(Algorithm::native, wide.algorithm);
  EXPECT_EQ("coop_256x160", wide.native_config);
  EXPECT_EQ(512, wide.tile_m);
  // m per rank 256 cannot take the 512-row config: the next best accepts it.
  const Plan narrow = plan(problem(8, 256, 8192, 4096), gpu_facts(), {});
  EXPECT_EQ(Algorithm::native, narrow.algorithm);
  EXPECT_EQ(256, narrow.tile_m);
  EXPECT_NE("coop_256x160", narrow.native_config);
  // A config the kernel refuses is never chosen, whatever its score.
  BackendCaps refused = gpu_facts();
  refused.native_configs[0].refusal = "not built for column-major B";
  EXPECT_NE("coop_256x160", plan(problem(8, 1024, 7168, 4096), refused, {}).native_config);
}

TEST(PlannerFacts, TileOptionsPickAConfigOrSayWhatWasBuilt) {
  ResolvedOptions o;
  o.tile_m = 256;
  o.tile_n = 128;
  const Plan p = plan(problem(8, 1024, 8192, 4096), gpu_facts(), o);
  EXPECT_EQ("pp_128x128", p.native_config);
  o.tile_n = 96;
  const Plan none = plan(problem(8, 1024, 8192, 4096), gpu_facts(), o);
  EXPECT_NE(Algorithm::native, none.algorithm);
  EXPECT_TRUE(contains(none.reason, "no native kernel config has tile")) << none.reason;
  EXPECT_TRUE(contains(none.reason, "512x160")) << none.reason;
}

TEST(PlannerFacts, TooFewTilesForTheProcessorsMeansNoOverlap) {
  // M 2048 x N 1280: 80 tiles of 128x256 (or 40 of 256x160) for 132 SMs.
  const Plan p = plan(problem(8, 256, 1280, 8192), gpu_facts(), {});
  EXPECT_EQ(Algorithm::decomposed, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "SMs busy")) << p.reason;
  EXPECT_EQ(Algorithm::native,
            plan(problem(8, 256, 1280, 8192), gpu_facts(), forced(Algorithm::native)).algorithm);
  // A full wave overlaps.
  EXPECT_EQ(Algorithm::native, plan(problem(8, 1024, 1280, 8192), gpu_facts(), {}).algorithm);
}

TEST(PlannerFacts, OneHardwareQueueMeansDecomposed) {
  BackendCaps c = gpu_facts();
  c.single_hardware_queue = true;
  const Plan p = plan(problem(8, 1024, 8192, 4096), c, {});
  EXPECT_EQ(Algorithm::decomposed, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "CUDA_DEVICE_MAX_CONNECTIONS=1")) << p.reason;
}

TEST(PlannerFacts, NoPeerAccessRulesOutNativeAndPipelined) {
  BackendCaps c = gpu_facts();
  c.no_peer_access = "ranks 4..7 are on another node";
  const Plan p = plan(problem(8, 1024, 8192, 4096), c, {});
  EXPECT_EQ(Algorithm::decomposed, p.algorithm);
  EXPECT_TRUE(contains(p.reason, "another node")) << p.reason;
  for (Algorithm a : {Algorithm::native, Algorithm::pipelined}) {
    try {
      (void)plan(problem(8, 1024, 8192, 4096), c, forced(a));
      ADD_FAILURE() << to_string(a) << " planned without peer access";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "another node")) << e.what();
    }
  }
}

// Matmul + reduce-scatter: the same rules, in its words (m: the rows each
// rank receives, M / W).
ProblemDesc rs(int world, std::int64_t m, std::int64_t n, std::int64_t k,
               DType dtype = DType::bf16) {
  ProblemDesc p = problem(world, m, n, k, dtype);
  p.op = OpKind::matmul_reduce_scatter;
  return p;
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

TEST(PlannerReduceScatter, FallbacksNameTheBlockerAndForcingNativeIsAnError) {
  const std::vector<Fallback> fallbacks = {
      {"chunk rows off the tile grid", rs(4, 300, 256, 128), Algorithm::pipelined,
       "rows per chunk (M/W = 300) is not a multiple of the native tile M (256)",
       "overlap the shipping of finished partials"},
      {"small chunks", rs(4, 100, 256, 128), Algorithm::decomposed, "rows per chunk (M/W = 100)",
       "chunks of 100 rows are below 128"},
      {"fp16", rs(4, 512, 256, 128, DType::fp16), Algorithm::pipelined,
       "native needs bf16, got fp16", "overlap the shipping"},
      {"n not a multiple of 8", rs(4, 512, 260, 128), Algorithm::pipelined,
       "n (260) is not a multiple of 8", "overlap the shipping"},
      {"k-slice not a multiple of 8", rs(4, 512, 256, 130), Algorithm::pipelined,
       "k (130) is not a multiple of 8", "overlap the shipping"},
      {"partial product over 32 bits", rs(8, std::int64_t{1} << 20, 512, 16), Algorithm::pipelined,
       "the partial product (M x n)", "overlap the shipping"},
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
