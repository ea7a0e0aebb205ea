// Every algorithm, forced, against the float64 reference: W = 1, 2, 4, 8,
// random non-square shapes, bf16/fp16/fp32, row- and column-major B, with and
// without the gathered A. Each case runs twice on one group with fresh inputs
// (the second run reuses the signals and workspace of the first), and every
// rank's outputs are checked.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::draw;
using asynctp_test::Seed;
using asynctp_test::Shape;

struct Case {
  Algorithm algorithm;
  int world;
  DType dtype;
  bool b_col_major;
  bool gathered;
};

std::string describe(const Case& c) {
  return std::string(to_string(c.algorithm)) + "_W" + std::to_string(c.world) + "_" +
         to_string(c.dtype) + (c.b_col_major ? "_bcol" : "_brow") +
         (c.gathered ? "_gathered" : "_nogathered");
}
std::string case_name(const ::testing::TestParamInfo<Case>& info) { return describe(info.param); }
void PrintTo(const Case& c, std::ostream* out) { *out << describe(c); }

std::vector<Case> cases() {
  std::vector<Case> all;
  for (int world : {1, 2, 4, 8}) {
    for (bool col : {false, true}) {
      for (bool gathered : {true, false}) all.push_back({Algorithm::native, world, DType::bf16, col, gathered});
      for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
        for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
          // Alternate the gathered output so each dtype sees both.
          const bool gathered = (world + (col ? 1 : 0) + static_cast<int>(dtype)) % 2 == 0;
          all.push_back({a, world, dtype, col, gathered});
        }
      }
    }
  }
  return all;
}

// A random non-square shape the forced algorithm can run. Native needs
// m % tile_m == 0 and n, k multiples of 8; small tiles give several tiles per
// chunk, and n is often not a multiple of tile_n (clipped tiles).
Shape draw_shape(const Case& c, std::mt19937_64& rng, Options& options) {
  Shape s;
  s.world = c.world;
  s.dtype = c.dtype;
  s.b_col_major = c.b_col_major;
  s.gathered = c.gathered;
  if (c.algorithm == Algorithm::native) {
    const std::int64_t tile_m = draw(rng, 0, 1) ? 16 : 32;
    options.tile_m = tile_m;
    options.tile_n = 8 * draw(rng, 2, 4);
    s.m = tile_m * draw(rng, 1, 4);
    s.n = 8 * draw(rng, 1, 12);
    s.k = 8 * draw(rng, 1, 16);
  } else {
    s.m = draw(rng, 16, 72);
    s.n = draw(rng, 8, 100);
    s.k = draw(rng, 8, 130);
  }
  return s;
}

class Correctness : public ::testing::TestWithParam<Case> {};

TEST_P(Correctness, MatchesFloat64ReferenceOnEveryRank) {
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Options options;
  options.algorithm = c.algorithm;
  options.wait_timeout_ms = 10'000;  // fail rather than hang for a minute
  const Shape shape = draw_shape(c, rng, options);
  SCOPED_TRACE(shape.to_string());

  cpu::Group group({c.world, 2});
  FusedProblem problem(shape, rng);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) problem.refill(rng);
    asynctp_test::expect_forced(asynctp_test::run_and_check(group, problem, options), options);
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, Correctness, ::testing::ValuesIn(cases()), case_name);

// Native with many tiles in every chunk: 4 M tiles x 3 N tiles (the last N
// tile clipped), so the persistent workers interleave tiles of one chunk.
TEST(CorrectnessNative, SeveralTilesPerChunk) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Options options;
  options.algorithm = Algorithm::native;
  options.tile_m = 16;
  options.tile_n = 16;
  options.wait_timeout_ms = 10'000;
  Shape shape;
  shape.world = 4;
  shape.m = 64;
  shape.n = 40;
  shape.k = 8 * draw(rng, 4, 24);
  cpu::Group group({4, 2});
  FusedProblem problem(shape, rng);
  problem.poison_outputs();
  const auto outcomes = asynctp_test::run_collective(
      group, [&](Comm& comm) { return problem.call(comm, options); });
  asynctp_test::expect_all_ok(outcomes);
  problem.expect_all_correct();
}

// The default tile (256 rows) with auto: a problem the CPU backend would plan
// as native on its own, no options needed.
TEST(CorrectnessNative, DefaultTilesWithAuto) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::ScopedEnv algo("ASYNCTP_ALGO", std::nullopt);
  asynctp_test::ScopedEnv tile_m("ASYNCTP_TILE_M", std::nullopt);
  asynctp_test::ScopedEnv tile_n("ASYNCTP_TILE_N", std::nullopt);
  Shape shape;
  shape.world = 2;
  shape.m = 256;
  shape.n = 8 * draw(rng, 2, 6);
  shape.k = 8 * draw(rng, 2, 8);
  cpu::Group group({2, 2});
  FusedProblem problem(shape, rng);
  problem.poison_outputs();
  Options options;
  options.wait_timeout_ms = 10'000;
  const auto outcomes = asynctp_test::run_collective(
      group, [&](Comm& comm) { return problem.call(comm, options); });
  asynctp_test::expect_all_ok(outcomes);
  for (const auto& out : outcomes) {
    EXPECT_EQ(out.info.algorithm, Algorithm::native) << out.info.reason;
    EXPECT_EQ(out.info.tile_m, 256);
  }
  problem.expect_all_correct();
}

}  // namespace
}  // namespace asynctp
