// Bounded waits: a chunk that never arrives (the drop hook) must end the
// call on that rank with Error(timeout) naming the chunk and the rank it
// should have come from, after about the configured timeout; the other ranks,
// which have all their data, return normally; nothing hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <thread>
#include <string>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::FusedProblem;
using asynctp_test::Seed;
using asynctp_test::Shape;

Shape shape4() {
  Shape s;
  s.world = 4;
  s.m = 32;
  s.n = 24;
  s.k = 40;
  return s;
}

struct DropResult {
  std::vector<asynctp_test::Outcome> outcomes;
  double seconds = 0;
};

DropResult run_with_drop(FusedProblem& problem, Options options, int drop_rank, int drop_chunk) {
  options.hooks.drop = [=](int rank, int chunk) { return rank == drop_rank && chunk == drop_chunk; };
  cpu::Group group({problem.world(), 2});
  problem.poison_outputs();
  DropResult result;
  const auto begin = std::chrono::steady_clock::now();
  result.outcomes = asynctp_test::run_collective(
      group, [&](Comm& comm) { return problem.call(comm, options); }, 20.0);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return result;
}

class Timeout : public ::testing::TestWithParam<Algorithm> {};

TEST_P(Timeout, DroppedChunkFailsOnlyThatRankNamingChunkAndSource) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  FusedProblem problem(shape4(), rng);
  Options options;
  options.algorithm = GetParam();
  options.tile_m = 16;
  options.tile_n = 8;
  options.wait_timeout_ms = 200;
  const DropResult r = run_with_drop(problem, options, /*rank=*/1, /*chunk=*/3);

  const auto& failed = r.outcomes[1];
  ASSERT_FALSE(failed.ok);
  EXPECT_EQ(failed.code, ErrorCode::timeout) << failed.message;
  for (const char* part : {"rank 1: chunk 3", "the A shard of rank 3", "never arrived",
                           "200 ms", "ASYNCTP_WAIT_TIMEOUT_MS"}) {
    EXPECT_NE(failed.message.find(part), std::string::npos)
        << "missing '" << part << "' in: " << failed.message;
  }
  for (int rank : {0, 2, 3}) {
    EXPECT_TRUE(r.outcomes[static_cast<std::size_t>(rank)].ok)
        << "rank " << rank << ": " << r.outcomes[static_cast<std::size_t>(rank)].message;
    problem.expect_correct(rank);
  }
  EXPECT_GE(r.seconds, 0.19) << "gave up before the timeout";
  EXPECT_LT(r.seconds, 10.0);
}

TEST_P(Timeout, DroppedLocalChunkToo) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  FusedProblem problem(shape4(), rng);
  Options options;
  options.algorithm = GetParam();
  options.tile_m = 16;
  options.tile_n = 8;
  options.wait_timeout_ms = 100;
  const DropResult r = run_with_drop(problem, options, /*rank=*/2, /*chunk=*/2);
  ASSERT_FALSE(r.outcomes[2].ok);
  EXPECT_EQ(r.outcomes[2].code, ErrorCode::timeout) << r.outcomes[2].message;
  EXPECT_NE(r.outcomes[2].message.find("rank 2: chunk 2 (the A shard of rank 2)"),
            std::string::npos)
      << r.outcomes[2].message;
  for (int rank : {0, 1, 3}) EXPECT_TRUE(r.outcomes[static_cast<std::size_t>(rank)].ok);
  EXPECT_LT(r.seconds, 10.0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, Timeout,
                         ::testing::Values(Algorithm::native, Algorithm::pipelined,
                                           Algorithm::decomposed),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(to_string(info.param));
                         });

// The timeout comes from ASYNCTP_WAIT_TIMEOUT_MS when Options leave it unset.
TEST(TimeoutEnv, EnvironmentSetsTheWait) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  asynctp_test::ScopedEnv env("ASYNCTP_WAIT_TIMEOUT_MS", "120");
  FusedProblem problem(shape4(), rng);
  Options options;
  options.algorithm = Algorithm::decomposed;
  const DropResult r = run_with_drop(problem, options, /*rank=*/0, /*chunk=*/1);
  ASSERT_FALSE(r.outcomes[0].ok);
  EXPECT_EQ(r.outcomes[0].code, ErrorCode::timeout) << r.outcomes[0].message;
  EXPECT_NE(r.outcomes[0].message.find("after waiting 120 ms"), std::string::npos)
      << r.outcomes[0].message;
  EXPECT_GE(r.seconds, 0.11);
  EXPECT_LT(r.seconds, 10.0);
}

// ASYNCTP_WAIT_TIMEOUT_MS / Options::wait_timeout_ms accept any positive
// int64; the largest ones ("wait forever") must let a normal call, with a
// slightly late chunk, complete instead of timing out at once.
TEST(TimeoutHuge, LargestTimeoutsStillLetCallsComplete) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (std::int64_t timeout_ms : {std::numeric_limits<std::int64_t>::max(),
                                  std::int64_t{9'223'372'036'854}}) {
    for (Algorithm algorithm : {Algorithm::native, Algorithm::decomposed}) {
      SCOPED_TRACE(std::string(to_string(algorithm)) + " timeout_ms " + std::to_string(timeout_ms));
      FusedProblem problem(shape4(), rng);
      Options options;
      options.algorithm = algorithm;
      options.tile_m = 16;
      options.wait_timeout_ms = timeout_ms;
      options.hooks.before_copy = [](int rank, int chunk) {
        if (chunk != rank) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      };
      cpu::Group group({problem.world(), 2});
      problem.poison_outputs();
      const auto outcomes = asynctp_test::run_collective(
          group, [&](Comm& comm) { return problem.call(comm, options); }, 20.0);
      asynctp_test::expect_all_ok(outcomes);
      problem.expect_all_correct();
    }
  }
}

}  // namespace
}  // namespace asynctp
