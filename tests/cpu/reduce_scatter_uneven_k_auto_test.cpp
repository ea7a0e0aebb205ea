// Known bug, found by the stress runner (tests/stress, 10,000 calls): with
// ASYNCTP_ALGO=auto and uneven K-slices, each rank plans from its own k, so
// one rank can pick native (its k a multiple of 8) and another decomposed;
// the agreement step then fails a valid call with "ranks disagree on the
// algorithm". The ranks asked for the same thing (auto) and the docs allow
// uneven K, so the call should run. Disabled until the planner decides
// collectively; run it with --gtest_also_run_disabled_tests.
#include <gtest/gtest.h>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

TEST(ReduceScatterUnevenK, DISABLED_AutoRunsWhenOnlySomeSlicesSuitNative) {
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::CleanPlannerEnv clean_env;
  asynctp_test::RsShape shape = asynctp_test::rs_shape(2, 16, 40, 40);
  shape.k = {40, 14};  // native needs k a multiple of 8: rank 1's is not
  asynctp_test::ReduceScatterProblem problem(shape, rng);
  cpu::Group group({2, 2});
  Options options;
  options.algorithm = Algorithm::automatic;
  options.tile_m = 16;
  options.tile_n = 8;
  asynctp_test::run_and_check(group, problem, options);
}

}  // namespace
}  // namespace asynctp
