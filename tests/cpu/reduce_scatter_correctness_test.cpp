// fused_matmul_reduce_scatter, every algorithm forced, against the float64
// reference: W = 1..8 (odd W included), random non-square shapes on and off
// the tile grid, uneven K-slices across ranks, bf16/fp16/fp32, row- and
// column-major B. Each case runs twice on one group with fresh inputs (the
// second run reuses the signals and workspaces of the first), and every
// rank's output is checked with the derived tolerance.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::draw;
using asynctp_test::ReduceScatterProblem;
using asynctp_test::RsShape;
using asynctp_test::Seed;

struct Case {
  Algorithm algorithm;
  int world;
  DType dtype;
  bool b_col_major;
};

std::string describe(const Case& c) {
  return std::string(to_string(c.algorithm)) + "_W" + std::to_string(c.world) + "_" +
         to_string(c.dtype) + (c.b_col_major ? "_bcol" : "_brow");
}
std::string case_name(const ::testing::TestParamInfo<Case>& info) { return describe(info.param); }
void PrintTo(const Case& c, std::ostream* out) { *out << describe(c); }

std::vector<Case> cases() {
  std::vector<Case> all;
  for (int world = 1; world <= 8; ++world) {
    for (bool col : {false, true}) {
      all.push_back({Algorithm::native, world, DType::bf16, col});  // native is bf16 only
      for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
        for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
          all.push_back({a, world, dtype, col});
        }
      }
    }
  }
  return all;
}

// A random shape the forced algorithm can run. Native needs m % tile_m == 0
// and n, k multiples of 8; small tiles give several tiles per chunk, and n is
// often not a multiple of tile_n (clipped tiles). The others take any shape,
// down to one row per rank (fewer rows than workers). K-slices differ.
RsShape draw_shape(const Case& c, std::mt19937_64& rng, Options& options) {
  RsShape s;
  s.world = c.world;
  s.dtype = c.dtype;
  s.b_col_major = c.b_col_major;
  if (c.algorithm == Algorithm::native) {
    const std::int64_t tile_m = draw(rng, 0, 1) ? 8 : 16;
    options.tile_m = tile_m;
    options.tile_n = 8 * draw(rng, 1, 4);
    s.m = tile_m * draw(rng, 1, 4);
    s.n = 8 * draw(rng, 1, 12);
    for (int r = 0; r < c.world; ++r) s.k.push_back(8 * draw(rng, 1, 12));
  } else {
    s.m = draw(rng, 1, 40);
    s.n = draw(rng, 1, 90);
    for (int r = 0; r < c.world; ++r) s.k.push_back(draw(rng, 1, 100));
  }
  return s;
}

class ReduceScatterCorrectness : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceScatterCorrectness, MatchesFloat64ReferenceOnEveryRank) {
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Options options;
  options.algorithm = c.algorithm;
  options.wait_timeout_ms = 10'000;  // fail rather than hang for a minute
  const RsShape shape = draw_shape(c, rng, options);
  SCOPED_TRACE(shape.to_string());

  cpu::Group group({c.world, 2});
  ReduceScatterProblem problem(shape, rng);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) problem.refill(rng);
    asynctp_test::expect_forced(asynctp_test::run_and_check(group, problem, options), options);
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ReduceScatterCorrectness, ::testing::ValuesIn(cases()),
                         case_name);

// More workers than rows in a chunk, and more than two: the lanes and the
// reduction's row shares must still cover every row exactly once.
TEST(ReduceScatterCorrectnessWorkers, ManyWorkersFewRows) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Options options;
    options.algorithm = algorithm;
    options.tile_m = 8;
    options.tile_n = 8;
    options.wait_timeout_ms = 10'000;
    cpu::Group group({3, 5});
    ReduceScatterProblem problem(asynctp_test::rs_shape(3, 8, 24, 16), rng);
    asynctp_test::run_and_check(group, problem, options);
  }
}

// The default tile (256 rows) with auto: a problem the CPU backend plans as
// native on its own, no options needed.
TEST(ReduceScatterCorrectnessNative, DefaultTilesWithAuto) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::ScopedEnv algo("ASYNCTP_ALGO", std::nullopt);
  asynctp_test::ScopedEnv tile_m("ASYNCTP_TILE_M", std::nullopt);
  asynctp_test::ScopedEnv tile_n("ASYNCTP_TILE_N", std::nullopt);
  cpu::Group group({2, 2});
  ReduceScatterProblem problem(
      asynctp_test::rs_shape(2, 256, 8 * draw(rng, 2, 6), 8 * draw(rng, 2, 8)), rng);
  Options options;
  options.wait_timeout_ms = 10'000;
  for (const auto& out : asynctp_test::run_and_check(group, problem, options)) {
    EXPECT_EQ(out.info.algorithm, Algorithm::native) << out.info.reason;
    EXPECT_EQ(out.info.tile_m, 256);
  }
}

}  // namespace
}  // namespace asynctp
