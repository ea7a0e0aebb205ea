// fused_matmul_reduce_scatter on the CUDA loopback group, against the
// float64 reference, every element within its error bound (outputs
// poisoned, so an element never written is caught; guard regions after
// them; each rank on its own non-blocking stream):
//
//   LoopbackReduceScatter/AllCases.MatchesFloat64OnEveryRank
//       W = 1..8 x Link::pcie/arrival x pipelined/decomposed x
//       bf16/fp16/fp32 x B row/col-major; random shapes from the printed
//       seed (any m, n; uneven K-slices). Native: W = 1..8 x both links x
//       B row/col-major in bf16, shapes on its tile grid (m a multiple of
//       256; n and the uneven K-slices multiples of 8; n off the 256-column
//       tile grid, so the last tiles are partial). Two rounds per group with
//       fresh inputs: the second reuses the first's slots, flags and tile
//       counters.
//   LoopbackReduceScatterPlan.AutoAndForcedNative
//       forced native runs correctly at W = 1 and 4 (256 rows per chunk);
//       auto runs correctly and says why; off the tile grid (200 rows per
//       chunk; n = 260) forced native fails on every rank with
//       Error(unsupported) naming the rule, outputs untouched.
//   LoopbackReduceScatterBadInput.OneRankFailsAll
//       a wrong out shape or a dtype mix on one rank: every rank throws,
//       no rank's out is written.
//   LoopbackReduceScatterSerialized.ModelsAreCorrect
//       serialize_ranks with Link::arrival and with Link::pcie (native,
//       pipelined, decomposed): correct over two rounds, last_call_ms > 0.
//   LoopbackReduceScatterBesideAllGather.NativeCallsBetweenTheOtherOpsCalls
//       W = 4, both links: native reduce-scatter and native all-gather
//       calls (two signal pieces a chunk) in turn on one group, three
//       rounds with fresh inputs: every call correct (the reduce-scatter
//       grid's tile counters are its own, never zeroed by a call).
//   LoopbackReduceScatterSerialized.ArrivalTakesTheModelledTime
//       Link::arrival at 0.05 GB/s, W = 4, every algorithm (native also
//       with 512 rows a chunk: two signal pieces): each rank's
//       span holds its W - 1 transfers back to back.
//   LoopbackReduceScatterGraph.ReplaysWithFreshInputs
//       native (512 rows a chunk: two signal pieces on Link::arrival),
//       pipelined and decomposed. Link::arrival: each rank captures its
//       uncaptured-first call; three replays with fresh inputs are correct;
//       a direct call afterwards too.
//       Link::pcie: the capture is refused on every rank (each rank's graph
//       would wait on its peers' graphs), outputs untouched, and the group
//       still runs direct calls.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/graph_capture.hpp"
#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::RsShape;
using asynctp_test::Seed;
using asynctp_test::gpu::DeviceRsProblem;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

std::int64_t draw(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// Native needs its tile grid: 256 rows per chunk (the kernel's tile M x
// cluster M), n and k multiples of 8 (16-byte TMA strides).
RsShape draw_shape(int world, DType dtype, bool b_col_major, Algorithm algorithm,
                   std::mt19937_64& rng) {
  RsShape s;
  s.world = world;
  s.dtype = dtype;
  s.b_col_major = b_col_major;
  if (algorithm == Algorithm::native) {
    s.m = 256 * draw(rng, 1, 2);
    s.n = 8 * draw(rng, 1, 80);
    for (int r = 0; r < world; ++r) s.k.push_back(8 * draw(rng, 1, 60));
    return s;
  }
  s.m = draw(rng, 1, 160);
  s.n = draw(rng, 1, 300);
  for (int r = 0; r < world; ++r) s.k.push_back(draw(rng, 1, 300));
  return s;
}

// Every rank runs the call and synchronize; the streams are drained after.
std::vector<lb::RankResult> run(LoopbackGroup& group, const RankStreams& streams,
                                const DeviceRsProblem& problem, const Options& options,
                                const std::string& what) {
  return lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      what);
}

struct Case {
  int world;
  Link link;
  Algorithm algorithm;
  DType dtype;
  bool b_col_major;
};

std::string describe(const Case& c) {
  return std::string(to_string(c.algorithm)) + "_W" + std::to_string(c.world) + "_" +
         cuda::to_string(c.link) + "_" + to_string(c.dtype) + (c.b_col_major ? "_bcol" : "_brow");
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (int world = 1; world <= 8; ++world) {
    for (Link link : {Link::pcie, Link::arrival}) {
      for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
        for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
          for (bool col : {false, true}) all.push_back({world, link, a, dtype, col});
        }
      }
      for (bool col : {false, true})
        all.push_back({world, link, Algorithm::native, DType::bf16, col});
    }
  }
  return all;
}

class LoopbackReduceScatter : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackReduceScatter, MatchesFloat64OnEveryRank) {
  ASYNCTP_REQUIRE_SM90();
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const RsShape shape = draw_shape(c.world, c.dtype, c.b_col_major, c.algorithm, rng);
  SCOPED_TRACE(shape.to_string());
  lb::print_case(seed, describe(c) + " " + shape.to_string());

  std::unique_ptr<LoopbackGroup> group;
  ASSERT_NO_THROW(group = std::make_unique<LoopbackGroup>(lb::loopback_config(c.world, c.link)));
  RankStreams streams;
  CUDA_ASSERT(streams.create(c.world));
  DeviceRsProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const Options options = lb::options_for(c.algorithm);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) {
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    }
    const auto results = run(*group, streams, problem, options, describe(c));
    lb::expect_all_ok(results, c.algorithm);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, LoopbackReduceScatter, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return describe(info.param);
                         });

TEST(LoopbackReduceScatterPlan, AutoAndForcedNative) {
  ASYNCTP_REQUIRE_SM90();
  lb::CleanPlannerEnv env;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const Options forced = lb::options_for(Algorithm::native);
  for (int world : {1, 4}) {
    SCOPED_TRACE("W=" + std::to_string(world));
    LoopbackGroup group(lb::loopback_config(world, Link::pcie));
    RankStreams streams;
    CUDA_ASSERT(streams.create(world));
    // On native's tile grid: bf16, 256 rows per chunk, n off the N tile.
    DeviceRsProblem problem(asynctp_test::rs_shape(world, 256, 264, 128), rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    lb::expect_all_ok(run(group, streams, problem, forced, "forced native"), Algorithm::native);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

    ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    Options automatic;
    automatic.wait_timeout_ms = lb::kSafeWaitTimeoutMs;
    const auto results = run(group, streams, problem, automatic, "auto");
    for (const auto& res : results) {
      EXPECT_TRUE(res.call_ok) << res.message;
      EXPECT_FALSE(res.info.reason.empty());
      EXPECT_EQ(results[0].info.algorithm, res.info.algorithm);
    }
    std::printf("  W=%d auto: %s: %s\n", world, to_string(results[0].info.algorithm),
                results[0].info.reason.c_str());
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

    // Off the tile grid: refused with the rule, on every rank.
    struct OffGrid {
      asynctp_test::RsShape shape;
      const char* rule;
    };
    const OffGrid off_grid[] = {
        {asynctp_test::rs_shape(world, 200, 264, 128), "is not a multiple of the native tile M"},
        {asynctp_test::rs_shape(world, 256, 260, 128), "n (260) is not a multiple of 8"},
    };
    for (const OffGrid& off : off_grid) {
      SCOPED_TRACE(off.shape.to_string());
      DeviceRsProblem refused_problem(off.shape, rng);
      ASSERT_NO_FATAL_FAILURE(refused_problem.prepare());
      const auto refused = run(group, streams, refused_problem, forced, "forced native off grid");
      for (int r = 0; r < world; ++r) {
        const lb::RankResult& res = refused[static_cast<std::size_t>(r)];
        EXPECT_FALSE(res.call_ok) << "rank " << r;
        EXPECT_EQ(ErrorCode::unsupported, res.code.value_or(ErrorCode::backend)) << res.message;
        EXPECT_TRUE(lb::contains(res.message, off.rule)) << res.message;
      }
      ASSERT_NO_FATAL_FAILURE(refused_problem.expect_all_outputs_untouched("forced native"));
    }
  }
}

TEST(LoopbackReduceScatterBadInput, OneRankFailsAll) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  DeviceRsProblem problem(asynctp_test::rs_shape(kWorld, 64, 96, 80), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const Options options = lb::options_for(Algorithm::pipelined);
  constexpr int kBad = 2;
  struct Bad {
    const char* what;
    const char* argument;
    TensorView (*out_of)(const TensorView&);
  };
  const Bad bads[] = {
      {"out one column short", "out",
       [](const TensorView& v) {
         return TensorView::row_major(v.data, v.dtype, v.rows, v.cols - 1, v.device);
       }},
      {"out in another dtype", "out",
       [](const TensorView& v) {
         return TensorView::row_major(v.data, DType::fp16, v.rows, v.cols, v.device);
       }},
  };
  for (const Bad& bad : bads) {
    SCOPED_TRACE(bad.what);
    const auto results = lb::run_ranks(
        group, streams,
        [&](Comm& comm, cudaStream_t s) {
          const int r = comm.rank();
          Options o = options;
          o.stream = s;
          const TensorView out = r == kBad ? bad.out_of(problem.out(r)) : problem.out(r);
          return fused_matmul_reduce_scatter(comm, problem.a(r), problem.b(r), out, o);
        },
        bad.what);
    for (int r = 0; r < kWorld; ++r) {
      const lb::RankResult& res = results[static_cast<std::size_t>(r)];
      EXPECT_FALSE(res.call_ok) << "rank " << r << " returned";
      EXPECT_EQ("call", res.stage) << "rank " << r;
      if (r == kBad) {
        EXPECT_EQ(ErrorCode::invalid_argument, res.code.value_or(ErrorCode::backend))
            << res.message;
        EXPECT_TRUE(lb::contains(res.message, bad.argument)) << res.message;
      }
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched(bad.what));
  }
  // The group still works afterwards.
  lb::expect_all_ok(run(group, streams, problem, options, "after bad input"), Algorithm::pipelined);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

// Both models of serialized ranks: the arrival link's delays and the PCIe
// link's self-shipping (each slot's placed partial out to the pinned bounce
// and back, gated like a real shipment).
TEST(LoopbackReduceScatterSerialized, ModelsAreCorrect) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (Link link : {Link::arrival, Link::pcie}) {
    for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      SCOPED_TRACE(std::string(to_string(link)) + " " + to_string(algorithm));
      LoopbackGroup group(lb::loopback_config(kWorld, link, 400, /*serialize_ranks=*/true));
      RankStreams streams;
      CUDA_ASSERT(streams.create(kWorld));
      DeviceRsProblem problem(asynctp_test::rs_shape(kWorld, 256, 512, 384), rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const Options options = lb::options_for(algorithm);
      for (int round = 0; round < 2; ++round) {
        if (round > 0) {
          ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
          ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
        }
        lb::expect_all_ok(run(group, streams, problem, options, "serialized"), algorithm);
        ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
        for (int r = 0; r < kWorld; ++r) {
          double ms = 0;
          ASSERT_NO_THROW(ms = group.last_call_ms(r));
          EXPECT_GT(ms, 0.0) << "rank " << r;
        }
      }
    }
  }
}

// Native reduce-scatter calls between the same group's native all-gather
// calls: the all-gather's chunks in two signal pieces put its epochs in
// signal words a reduce-scatter call does not zero (it zeroes nothing when
// its epochs are fresh), so every native reduce-scatter call must find its
// grid's tile counters at 0 whatever the other op left in the flag words.
TEST(LoopbackReduceScatterBesideAllGather, NativeCallsBetweenTheOtherOpsCalls) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (Link link : {Link::arrival, Link::pcie}) {
    SCOPED_TRACE(cuda::to_string(link));
    LoopbackGroup group(lb::loopback_config(kWorld, link));
    RankStreams streams;
    CUDA_ASSERT(streams.create(kWorld));
    DeviceRsProblem reduce_scatter(asynctp_test::rs_shape(kWorld, 256, 264, 128), rng);
    ASSERT_NO_FATAL_FAILURE(reduce_scatter.prepare());
    // 512 rows x 4096 per shard: 4 MB, two signal pieces of 2 MB.
    lb::LoopbackProblem all_gather(asynctp_test::make_shape(kWorld, 512, 256, 4096), rng);
    ASSERT_NO_FATAL_FAILURE(all_gather.prepare());
    const Options options = lb::options_for(Algorithm::native);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      if (round > 0) {
        ASSERT_NO_FATAL_FAILURE(reduce_scatter.refill(rng));
        ASSERT_NO_FATAL_FAILURE(reduce_scatter.poison_outputs());
        ASSERT_NO_FATAL_FAILURE(all_gather.refill(rng));
        ASSERT_NO_FATAL_FAILURE(all_gather.poison_outputs());
      }
      lb::expect_all_ok(run(group, streams, reduce_scatter, options, "reduce-scatter"),
                        Algorithm::native);
      ASSERT_NO_FATAL_FAILURE(reduce_scatter.expect_all_correct());
      const auto gathered = lb::run_ranks(
          group, streams,
          [&](Comm& comm, cudaStream_t s) { return all_gather.call(comm, options, s); },
          "all-gather");
      lb::expect_all_ok(gathered, Algorithm::native);
      for (const auto& result : gathered) {
        EXPECT_NE(result.info.reason.find("2 signals per chunk"), std::string::npos)
            << result.info.reason;
      }
      ASSERT_NO_FATAL_FAILURE(all_gather.download_outputs());
      ASSERT_NO_FATAL_FAILURE(all_gather.expect_all_correct());
    }
  }
}

// The arrival link's model: on a slow link (3 transfers of 256 x 512 bf16,
// 256 KiB, at 0.05 GB/s: 5.2 ms each; of 512 rows, native's chunks in two
// signal pieces), each rank's span holds its W - 1 transfers one after the
// other (one link), for every algorithm: the model neither releases a slot
// before its transfer nor carries two at once.
TEST(LoopbackReduceScatterSerialized, ArrivalTakesTheModelledTime) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  constexpr double kGbps = 0.05;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::vector<std::pair<Algorithm, std::int64_t>> cases = {{Algorithm::native, 256},
                                                                 {Algorithm::native, 512},
                                                                 {Algorithm::pipelined, 256},
                                                                 {Algorithm::decomposed, 256}};
  for (const auto& [algorithm, rows] : cases) {
    SCOPED_TRACE(std::string(to_string(algorithm)) + " " + std::to_string(rows) + " rows");
    const RsShape shape = asynctp_test::rs_shape(kWorld, rows, 512, 384);
    const double transfer_ms = static_cast<double>(shape.m * shape.n * 2) / (kGbps * 1e9) * 1e3;
    const double modelled_ms = (kWorld - 1) * transfer_ms;
    LoopbackGroup group(
        lb::loopback_config(kWorld, Link::arrival, kGbps, /*serialize_ranks=*/true));
    RankStreams streams;
    CUDA_ASSERT(streams.create(kWorld));
    DeviceRsProblem problem(shape, rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const Options options = lb::options_for(algorithm);
    for (int round = 0; round < 2; ++round) {
      if (round > 0) {
        ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
        ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
      }
      const auto results = run(group, streams, problem, options, "modelled arrivals");
      lb::expect_all_ok(results, algorithm);
      if (algorithm == Algorithm::native && rows == 512) {
        EXPECT_NE(results[0].info.reason.find("2 signals per chunk"), std::string::npos)
            << results[0].info.reason;
      }
      ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
      for (int r = 0; r < kWorld; ++r) {
        const double ms = group.last_call_ms(r);
        std::printf("    %s %lld rows round %d rank %d: %.2f ms (modelled transfers %.2f ms)\n",
                    to_string(algorithm), static_cast<long long>(rows), round, r, ms, modelled_ms);
        EXPECT_GE(ms, 0.99 * modelled_ms) << "rank " << r;
        EXPECT_LT(ms, modelled_ms + 1000.0) << "rank " << r;
      }
    }
  }
}

struct GraphCase {
  Link link;
  Algorithm algorithm;
};

class LoopbackReduceScatterGraph : public ::testing::TestWithParam<GraphCase> {};

TEST_P(LoopbackReduceScatterGraph, ReplaysWithFreshInputs) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  constexpr int kReplays = 3;
  const GraphCase& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  RsShape shape =
      draw_shape(kWorld, DType::bf16, c.algorithm != Algorithm::decomposed, c.algorithm, rng);
  // Native: two signal pieces a chunk on the arrival link, whose flags a
  // replay must find reset.
  if (c.algorithm == Algorithm::native) shape.m = 512;
  SCOPED_TRACE(shape.to_string());
  lb::print_case(seed, shape.to_string());
  LoopbackGroup group(lb::loopback_config(kWorld, c.link));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  DeviceRsProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const Options options = lb::options_for(c.algorithm);

  lb::expect_all_ok(run(group, streams, problem, options, "direct call before capture"),
                    c.algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());

  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const lb::RankCaptures caps = lb::capture_every_rank(
      group, streams, cudaStreamCaptureModeThreadLocal,
      [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); });
  if (c.link == Link::pcie) {
    // Refused: each rank's reduction would wait on its peers' graphs.
    for (int r = 0; r < kWorld; ++r) {
      lb::RankCapture& cap = *caps[static_cast<std::size_t>(r)];
      EXPECT_FALSE(cap.call_ok) << "rank " << r;
      EXPECT_TRUE(lb::contains(cap.message, "Link::arrival")) << cap.message;
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("refused capture"));
    lb::expect_all_ok(run(group, streams, problem, options, "direct call after the refusal"),
                      c.algorithm);
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
    return;
  }
  for (int r = 0; r < kWorld; ++r) {
    lb::RankCapture& cap = *caps[static_cast<std::size_t>(r)];
    ASSERT_EQ(cudaSuccess, cap.begin) << "rank " << r;
    ASSERT_TRUE(cap.call_ok) << "rank " << r << ": " << cap.message;
    ASSERT_EQ(cudaSuccess, cap.end) << "rank " << r << ": " << cudaGetErrorName(cap.end);
    CUDA_ASSERT(cudaGraphInstantiate(&cap.exec, cap.graph, 0));
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched("after capture"));

  for (int i = 0; i < kReplays; ++i) {
    SCOPED_TRACE("replay " + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
    ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    CUDA_ASSERT(lb::launch_every_rank(caps, streams));
    streams.drain("replay");
    ASSERT_NO_FATAL_FAILURE(lb::expect_synchronize_clean(group, "replay"));
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
    if (HasFailure()) break;
  }

  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  lb::expect_all_ok(run(group, streams, problem, options, "direct call after replays"),
                    c.algorithm);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

INSTANTIATE_TEST_SUITE_P(Modes, LoopbackReduceScatterGraph,
                         ::testing::Values(GraphCase{Link::pcie, Algorithm::native},
                                           GraphCase{Link::pcie, Algorithm::pipelined},
                                           GraphCase{Link::pcie, Algorithm::decomposed},
                                           GraphCase{Link::arrival, Algorithm::native},
                                           GraphCase{Link::arrival, Algorithm::pipelined},
                                           GraphCase{Link::arrival, Algorithm::decomposed}),
                         [](const ::testing::TestParamInfo<GraphCase>& info) {
                           return std::string(cuda::to_string(info.param.link)) + "_" +
                                  to_string(info.param.algorithm);
                         });

}  // namespace
}  // namespace asynctp
