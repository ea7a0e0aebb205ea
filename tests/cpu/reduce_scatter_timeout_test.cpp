// Bounded waits of the reduce-scatter: a partial that is never shipped (the
// drop hook) ends its owner's call with Error(timeout) naming the chunk and
// the rank it should have come from, after about the configured timeout; the
// other ranks, which have every partial they need, return normally; the
// group stays usable, and a GEMM that stalls past the timeout is named too.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::ReduceScatterProblem;
using asynctp_test::Seed;

struct Timed {
  std::vector<asynctp_test::Outcome> outcomes;
  double seconds = 0;
};

Timed run_timed(cpu::Group& group, ReduceScatterProblem& problem, const Options& options) {
  problem.poison_outputs();
  Timed result;
  const auto begin = std::chrono::steady_clock::now();
  result.outcomes = asynctp_test::run_collective(
      group, [&](Comm& comm) { return problem.call(comm, options); }, 20.0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return result;
}

Options options_for(Algorithm algorithm, std::int64_t timeout_ms) {
  Options options;
  options.algorithm = algorithm;
  options.tile_m = 8;
  options.tile_n = 8;
  options.wait_timeout_ms = timeout_ms;
  return options;
}

class ReduceScatterTimeout : public ::testing::TestWithParam<Algorithm> {};

TEST_P(ReduceScatterTimeout, DroppedPartialFailsOnlyItsOwnerNamingChunkAndSource) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({5, 2});
  ReduceScatterProblem problem(asynctp_test::rs_shape(5, 16, 24, 16), rng);
  Options options = options_for(GetParam(), 200);
  // Rank 1 never ships its partial of chunk 3 to rank 3.
  options.hooks.drop = [](int rank, int chunk) { return rank == 1 && chunk == 3; };
  const Timed r = run_timed(group, problem, options);

  const auto& failed = r.outcomes[3];
  ASSERT_FALSE(failed.ok);
  EXPECT_EQ(failed.code, ErrorCode::timeout) << failed.message;
  for (const char* part :
       {"rank 3: chunk 3 (the partial of rank 1) never arrived", "expected epoch", "200 ms",
        "ASYNCTP_WAIT_TIMEOUT_MS", "rank 1's producer stalled"}) {
    EXPECT_NE(failed.message.find(part), std::string::npos)
        << "missing '" << part << "' in: " << failed.message;
  }
  for (int rank : {0, 1, 2, 4}) {
    EXPECT_TRUE(r.outcomes[static_cast<std::size_t>(rank)].ok)
        << "rank " << rank << ": " << r.outcomes[static_cast<std::size_t>(rank)].message;
    problem.expect_correct(rank);
  }
  EXPECT_GE(r.seconds, 0.19) << "gave up before the timeout";
  EXPECT_LT(r.seconds, 10.0);

  // The group is not left broken, nor its epochs confused by the flag the
  // dropped partial left behind.
  for (int again = 0; again < 2; ++again) {
    problem.refill(rng);
    const Timed next = run_timed(group, problem, options_for(GetParam(), 10'000));
    asynctp_test::expect_all_ok(next.outcomes);
    problem.expect_all_correct();
  }
}

// A GEMM that stalls past the timeout: the producer, waiting to ship the
// stalled chunk, names it; the peers then miss that rank's partials.
TEST_P(ReduceScatterTimeout, StalledGemmIsNamedByTheProducer) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({3, 2});
  ReduceScatterProblem problem(asynctp_test::rs_shape(3, 16, 16, 16), rng);
  Options options = options_for(GetParam(), 100);
  options.hooks.before_compute = [](int rank, int) {
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  };
  const Timed r = run_timed(group, problem, options);
  ASSERT_FALSE(r.outcomes[0].ok);
  EXPECT_EQ(r.outcomes[0].code, ErrorCode::timeout) << r.outcomes[0].message;
  EXPECT_NE(r.outcomes[0].message.find("rank 0: chunk 1 of this rank's partial product was not "
                                       "computed"),
            std::string::npos)
      << r.outcomes[0].message;
  for (int rank : {1, 2}) {
    ASSERT_FALSE(r.outcomes[static_cast<std::size_t>(rank)].ok);
    EXPECT_NE(r.outcomes[static_cast<std::size_t>(rank)].message.find("(the partial of rank 0)"),
              std::string::npos)
        << r.outcomes[static_cast<std::size_t>(rank)].message;
  }
  EXPECT_LT(r.seconds, 10.0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ReduceScatterTimeout,
                         ::testing::Values(Algorithm::native, Algorithm::pipelined,
                                           Algorithm::decomposed),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(to_string(info.param));
                         });

// The timeout comes from ASYNCTP_WAIT_TIMEOUT_MS when Options leave it unset.
TEST(ReduceScatterTimeoutEnv, EnvironmentSetsTheWait) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::ScopedEnv env("ASYNCTP_WAIT_TIMEOUT_MS", "120");
  cpu::Group group({2, 2});
  ReduceScatterProblem problem(asynctp_test::rs_shape(2, 8, 8, 8), rng);
  Options options;
  options.algorithm = Algorithm::pipelined;
  options.hooks.drop = [](int rank, int) { return rank == 0; };
  const Timed r = run_timed(group, problem, options);
  ASSERT_FALSE(r.outcomes[1].ok);
  EXPECT_EQ(r.outcomes[1].code, ErrorCode::timeout) << r.outcomes[1].message;
  EXPECT_NE(r.outcomes[1].message.find("after waiting 120 ms"), std::string::npos)
      << r.outcomes[1].message;
  EXPECT_TRUE(r.outcomes[0].ok) << r.outcomes[0].message;
  EXPECT_GE(r.seconds, 0.11);
}

}  // namespace
}  // namespace asynctp
