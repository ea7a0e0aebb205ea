// The CUDA loopback backend against the float64 reference, every algorithm
// forced (each rank on its own non-blocking stream, asynctp::synchronize
// before the host reads anything; outputs poisoned, so an element never
// written is caught; guard regions after the outputs):
//
//   LoopbackCorrectness/AllCases.MatchesFloat64OnEveryRank
//       W = 1, 2, 4, 8 x B row/col-major x native (and at W >= 2 native
//       with its last chunk as a library GEMM)/pipelined/decomposed x
//       Link::pcie/arrival; random shapes from the printed seed (native: m a
//       multiple of 64, often one tile row per chunk, partial N tiles;
//       pipelined/decomposed: any m, n, k, dtypes bf16/fp16/fp32 in
//       rotation); with and without the gathered A (bitwise equal to the
//       concatenated shards when requested). Two rounds per group, fresh
//       inputs, so the second reuses the first's signals and workspace.
//   LoopbackCorrectnessLarge.NativeMoreTilesThanSms
//       W = 8, more output tiles than SMs (for every kernel config's tile),
//       on both links and B layouts.
//   LoopbackCorrectnessSerialized.EveryAlgorithm
//       serialize_ranks = true (one rank's device work after another's).
//   LoopbackCorrectnessComm.RanksAndBackend
//       the comms a group hands out: rank, world size, device kind.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/loopback_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::Shape;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

struct Case {
  Algorithm algorithm;
  int world;
  bool b_col_major;
  Link link;
  DType dtype;  // bf16 for native
  bool gathered;
  NativeTail tail = NativeTail::automatic;  // native: library forces the library tail
};

std::string describe(const Case& c) {
  return std::string(to_string(c.algorithm)) + "_W" + std::to_string(c.world) +
         (c.b_col_major ? "_bcol_" : "_brow_") + cuda::to_string(c.link) + "_" +
         to_string(c.dtype) + (c.gathered ? "_gathered" : "_nogathered") +
         (c.tail == NativeTail::library ? "_librarytail" : "");
}
std::string case_name(const ::testing::TestParamInfo<Case>& info) { return describe(info.param); }
void PrintTo(const Case& c, std::ostream* out) { *out << describe(c); }

std::vector<Case> cases() {
  std::vector<Case> all;
  const DType dtypes[] = {DType::bf16, DType::fp16, DType::fp32};
  int combo = 0;  // counts (world, layout, link) combinations
  int index = 0;  // counts cases
  for (int world : {1, 2, 4, 8}) {
    for (bool col : {false, true}) {
      for (Link link : {Link::pcie, Link::arrival}) {
        int lane = 0;
        for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
          // The library algorithms rotate through the dtypes (each sees all
          // three across the combinations); cases alternate the gathered
          // output.
          const DType dtype = a == Algorithm::native ? DType::bf16 : dtypes[(combo + lane) % 3];
          all.push_back({a, world, col, link, dtype, index % 2 == 0});
          // Native again with its last chunk as a library GEMM, beside the
          // kernel's other chunks (W >= 2).
          if (a == Algorithm::native && world >= 2) {
            all.push_back({a, world, col, link, dtype, index % 2 != 0, NativeTail::library});
          }
          ++lane;
          ++index;
        }
        ++combo;
      }
    }
  }
  return all;
}

std::int64_t draw(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// A random non-square shape the forced algorithm can run. Native: m a
// multiple of 64 (the smallest m granularity of the kernel configs; often
// not one of 128 or 256, so the 64-row configs run too), n and k multiples of 8, n usually not a multiple of any
// tile N (clipped tiles), several tiles per chunk. Library algorithms: any
// sizes, odd ones included.
Shape draw_shape(const Case& c, std::mt19937_64& rng) {
  Shape s =
      asynctp_test::loopback::loopback_shape(c.world, 0, 0, 0, c.dtype, c.b_col_major, c.gathered);
  if (c.algorithm == Algorithm::native) {
    s.m = 64 * draw(rng, 1, c.world <= 2 ? 8 : 4);
    s.n = 8 * draw(rng, 17, 100);  // 136 .. 800
    s.k = 8 * draw(rng, 2, 96);    // 16 .. 768
  } else {
    s.m = draw(rng, 1, 200);
    s.n = draw(rng, 1, 300);
    s.k = draw(rng, 1, 300);
  }
  return s;
}

class LoopbackCorrectness : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackCorrectness, MatchesFloat64OnEveryRank) {
  ASYNCTP_REQUIRE_SM90();
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const Shape shape = draw_shape(c, rng);
  SCOPED_TRACE(shape.to_string());
  lb::print_case(seed, shape.to_string());

  std::unique_ptr<LoopbackGroup> group;
  ASSERT_NO_THROW(group = std::make_unique<LoopbackGroup>(lb::loopback_config(c.world, c.link)));
  RankStreams streams;
  CUDA_ASSERT(streams.create(c.world));
  LoopbackProblem problem(shape, rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  Options options = lb::options_for(c.algorithm);
  if (c.tail != NativeTail::automatic) options.native_tail = c.tail;

  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) {
      ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
    }
    const auto results = lb::run_ranks(
        *group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        describe(c) + " round " + std::to_string(round));
    lb::expect_all_ok(results, c.algorithm);
    for (const auto& res : results) {
      if (!res.ok()) continue;
      EXPECT_TRUE(lb::contains(res.info.reason, "forced")) << res.info.reason;
      if (c.algorithm == Algorithm::native) {
        ASSERT_GT(res.info.tile_m, 0);
        EXPECT_GT(res.info.tile_n, 0);
        EXPECT_EQ(0, shape.m % res.info.tile_m)
            << "native ran with tile M " << res.info.tile_m << " on m per rank " << shape.m;
        EXPECT_EQ(c.tail == NativeTail::library,
                  lb::contains(res.info.reason, "as a library GEMM, forced"))
            << res.info.reason;
      }
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, LoopbackCorrectness, ::testing::ValuesIn(cases()), case_name);

// More output tiles than SMs, so each persistent CTA walks several tiles
// across chunk boundaries, while the peer chunks arrive over each link. The
// tile count is bounded below over every kernel config of the build (the
// planner picks one; RunInfo reports its M granularity, not its CTA tile).
TEST(LoopbackCorrectnessLarge, NativeMoreTilesThanSms) {
  ASYNCTP_REQUIRE_SM90();
  const int sms = asynctp_test::gpu::sm_count();
  ASSERT_GT(sms, 0);
  constexpr int kWorld = 8;
  for (Link link : {Link::pcie, Link::arrival}) {
    const bool bcol = link == Link::arrival;
    const Seed seed(cuda::to_string(link));
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    // Total M 4096, n 2304 + a partial tile.
    const Shape shape = lb::loopback_shape(kWorld, 512, 2304 + 8 * draw(rng, 1, 15),
                                           8 * draw(rng, 16, 48), DType::bf16, bcol);
    SCOPED_TRACE(shape.to_string() + " link " + cuda::to_string(link));
    lb::print_case(seed, shape.to_string() + " link " + cuda::to_string(link));
    std::int64_t min_tiles = -1;
    for (const auto& config : cuda::native::native_gemm_configs()) {
      const std::int64_t tiles =
          (kWorld * shape.m / config.tile_m) * ((shape.n + config.tile_n - 1) / config.tile_n);
      if (min_tiles < 0 || tiles < min_tiles) min_tiles = tiles;
    }
    ASSERT_GT(min_tiles, sms) << "the case no longer covers more output tiles than SMs";

    std::unique_ptr<LoopbackGroup> group;
    ASSERT_NO_THROW(group = std::make_unique<LoopbackGroup>(lb::loopback_config(kWorld, link)));
    RankStreams streams;
    CUDA_ASSERT(streams.create(kWorld));
    LoopbackProblem problem(shape, rng);
    ASSERT_NO_FATAL_FAILURE(problem.prepare());
    const Options options = lb::options_for(Algorithm::native);
    const auto results = lb::run_ranks(
        *group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        "large native");
    lb::expect_all_ok(results, Algorithm::native);
    std::printf("  >= %lld output tiles on %d SMs; %s\n", static_cast<long long>(min_tiles), sms,
                results[0].info.reason.c_str());
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
  }
}

// serialize_ranks = true: each rank's device work waits for the previous
// rank's; results must be the same.
TEST(LoopbackCorrectnessSerialized, EveryAlgorithm) {
  ASYNCTP_REQUIRE_SM90();
  constexpr int kWorld = 4;
  for (Link link : {Link::pcie, Link::arrival}) {
    for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      const std::string what = std::string(to_string(algorithm)) + " " + cuda::to_string(link);
      const Seed seed(what);
      SCOPED_TRACE(seed.note());
      SCOPED_TRACE(what);
      auto rng = seed.rng();
      const Shape shape =
          lb::loopback_shape(kWorld, 256, 8 * draw(rng, 17, 60), 8 * draw(rng, 8, 40), DType::bf16,
                             algorithm == Algorithm::pipelined);
      lb::print_case(seed, what + " " + shape.to_string());
      std::unique_ptr<LoopbackGroup> group;
      ASSERT_NO_THROW(group = std::make_unique<LoopbackGroup>(
                          lb::loopback_config(kWorld, link, 400, /*serialize_ranks=*/true)));
      EXPECT_TRUE(group->config().serialize_ranks);
      RankStreams streams;
      CUDA_ASSERT(streams.create(kWorld));
      LoopbackProblem problem(shape, rng);
      ASSERT_NO_FATAL_FAILURE(problem.prepare());
      const Options options = lb::options_for(algorithm);
      for (int round = 0; round < 2; ++round) {
        if (round > 0) {
          ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
          ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
        }
        const auto results = lb::run_ranks(
            *group, streams,
            [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); }, what);
        lb::expect_all_ok(results, algorithm);
        ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
      }
    }
  }
}

TEST(LoopbackCorrectnessComm, RanksAndBackend) {
  ASYNCTP_REQUIRE_SM90();
  EXPECT_EQ("", cuda::unavailable_reason(0));
  constexpr int kWorld = 4;
  LoopbackGroup group(lb::loopback_config(kWorld, Link::arrival, 123.0));
  EXPECT_EQ(kWorld, group.world_size());
  EXPECT_EQ(Link::arrival, group.config().link);
  EXPECT_EQ(123.0, group.config().link_gbps);
  for (int r = 0; r < kWorld; ++r) {
    Comm& comm = group.comm(r);
    EXPECT_EQ(r, comm.rank());
    EXPECT_EQ(kWorld, comm.world_size());
    EXPECT_EQ(DeviceKind::cuda, comm.device_kind());
    EXPECT_NE(nullptr, comm.backend_name());
  }
  // run() hands each rank's comm to its own thread, with the group's device
  // current there.
  std::vector<int> seen(kWorld, -1), device(kWorld, -1);
  lb::run_group_bounded(
      group,
      [&](Comm& comm) {
        seen[static_cast<std::size_t>(comm.rank())] = comm.rank();
        int d = -1;
        if (cudaGetDevice(&d) == cudaSuccess) device[static_cast<std::size_t>(comm.rank())] = d;
      },
      "identity");
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(r, seen[static_cast<std::size_t>(r)]);
    EXPECT_EQ(0, device[static_cast<std::size_t>(r)]);
  }
  EXPECT_EQ(Link::pcie, cuda::parse_link("pcie", "--link"));
  EXPECT_EQ(Link::arrival, cuda::parse_link("arrival", "--link"));
  EXPECT_THROW(cuda::parse_link("nvlink", "--link"), Error);
}

}  // namespace
}  // namespace asynctp
