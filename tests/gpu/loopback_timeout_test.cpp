// The bounded wait of the native kernel on the CUDA loopback backend, and the
// hooks CUDA refuses. Every host wait here is bounded (run_ranks aborts the
// process on a hang), so no test can hang.
//
//   LoopbackTimeout/Links.DroppedPeerChunkTimesOutThenGroupRecovers
//       native, W = 4, hooks.drop never copies/signals chunk 3 on rank 1,
//       wait_timeout_ms = 300, over Link::pcie and Link::arrival: rank 1's
//       call returns (asynchronous: within the timeout) and its synchronize
//       throws Error(timeout) naming chunk 3 / rank 3, no earlier than the
//       timeout; ranks 0, 2, 3 succeed with correct results; then a normal
//       call on the same group is correct on every rank (twice). The warm-up
//       call before the drop leaves chunk 3's flag at its own epoch, and an
//       uncaptured call does not zero the flags (core::FlagResetRule): the
//       timeout also shows that a stale flag is never taken as ready.
//   LoopbackRefusedHooks.DropHookForLibraryAlgorithms
//       pipelined/decomposed with a drop hook: every rank's call throws
//       Error(invalid_argument) naming options.hooks.drop; nothing written.
//   LoopbackRefusedHooks.BeforeCopyHook
//       hooks.before_copy with every algorithm: Error(invalid_argument)
//       naming options.hooks.before_copy on every rank; nothing written; the
//       group still works.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

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

constexpr int kWorld = 4;
constexpr int kDropRank = 1;
constexpr int kDropChunk = 3;
constexpr std::int64_t kTimeoutMs = 300;

Shape small_shape() { return lb::loopback_shape(kWorld, 256, 264, 256); }

// A normal native call on every rank, fresh inputs, checked.
void expect_normal_call_correct(LoopbackGroup& group, const RankStreams& streams,
                                LoopbackProblem& problem, std::mt19937_64& rng,
                                const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const Options options = lb::options_for(Algorithm::native);
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      what);
  lb::expect_all_ok(results, Algorithm::native);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

class LoopbackTimeout : public ::testing::TestWithParam<Link> {};

TEST_P(LoopbackTimeout, DroppedPeerChunkTimesOutThenGroupRecovers) {
  ASYNCTP_REQUIRE_SM90();
  const Link link = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  lb::print_case(seed, small_shape().to_string() + " link " + cuda::to_string(link));
  LoopbackGroup group(lb::loopback_config(kWorld, link));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(small_shape(), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());

  // A normal call first, so one-time set-up (workspaces, module loading) is
  // not counted in the enqueue time measured below.
  ASSERT_NO_FATAL_FAILURE(expect_normal_call_correct(group, streams, problem, rng, "warm-up"));

  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  Options options = lb::options_for(Algorithm::native);
  options.wait_timeout_ms = kTimeoutMs;
  options.hooks.drop = [](int rank, int chunk) { return rank == kDropRank && chunk == kDropChunk; };
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "dropped chunk");

  const auto& failed = results[kDropRank];
  std::printf("  rank %d: call %.1f ms, synchronize threw after %.1f ms: %s\n", kDropRank,
              failed.call_ms, failed.host_ms, failed.message.c_str());
  ASSERT_TRUE(failed.call_ok) << "the call itself threw (" << failed.message
                              << "); the timeout belongs to synchronize";
  EXPECT_LT(failed.call_ms, double(kTimeoutMs))
      << "the call waited for the device instead of enqueueing and returning";
  ASSERT_FALSE(failed.sync_ok) << "synchronize returned although chunk " << kDropChunk
                               << " never came";
  EXPECT_EQ("synchronize", failed.stage);
  EXPECT_EQ(ErrorCode::timeout, failed.code) << failed.message;
  for (const std::string& part :
       {"chunk " + std::to_string(kDropChunk), "rank " + std::to_string(kDropChunk)}) {
    EXPECT_TRUE(lb::contains(failed.message, part))
        << "missing '" << part << "' in: " << failed.message;
  }
  EXPECT_GE(failed.host_ms, 0.9 * double(kTimeoutMs)) << "gave up before the timeout";
  EXPECT_LT(failed.host_ms, 30'000.0);

  for (int r = 0; r < kWorld; ++r) {
    if (r == kDropRank) continue;
    const auto& res = results[static_cast<std::size_t>(r)];
    EXPECT_TRUE(res.ok()) << "rank " << r << " (all its chunks came) threw in " << res.stage << ": "
                          << res.message;
    EXPECT_EQ(Algorithm::native, res.info.algorithm);
  }
  ASSERT_NO_FATAL_FAILURE(problem.download_outputs());
  for (int r = 0; r < kWorld; ++r) {
    if (r != kDropRank) problem.host().expect_correct(r);
  }

  // The comm is usable again: normal calls on the same group are correct.
  ASSERT_NO_FATAL_FAILURE(
      expect_normal_call_correct(group, streams, problem, rng, "first call after the timeout"));
  ASSERT_NO_FATAL_FAILURE(
      expect_normal_call_correct(group, streams, problem, rng, "second call after the timeout"));
}

INSTANTIATE_TEST_SUITE_P(Links, LoopbackTimeout, ::testing::Values(Link::pcie, Link::arrival),
                         [](const ::testing::TestParamInfo<Link>& info) {
                           return std::string(cuda::to_string(info.param));
                         });

// Every rank's call threw Error(invalid_argument) naming `argument`, before
// enqueueing anything: every output still poisoned.
void expect_refused_everywhere(const std::vector<lb::RankResult>& results, LoopbackProblem& problem,
                               const std::string& argument) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    const auto& res = results[r];
    EXPECT_FALSE(res.call_ok) << "rank " << r << " accepted " << argument;
    EXPECT_EQ("call", res.stage) << "rank " << r;
    EXPECT_EQ(ErrorCode::invalid_argument, res.code) << "rank " << r << ": " << res.message;
    EXPECT_TRUE(lb::contains(res.message, argument))
        << "rank " << r << ": missing '" << argument << "' in: " << res.message;
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched(argument + " refused"));
}

TEST(LoopbackRefusedHooks, DropHookForLibraryAlgorithms) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(small_shape(), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  for (Algorithm algorithm : {Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Options options = lb::options_for(algorithm);
    options.hooks.drop = [](int rank, int chunk) {
      return rank == kDropRank && chunk == kDropChunk;
    };
    const auto results = lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        std::string("drop hook with ") + to_string(algorithm));
    ASSERT_NO_FATAL_FAILURE(expect_refused_everywhere(results, problem, "hooks.drop"));
  }
  ASSERT_NO_FATAL_FAILURE(expect_normal_call_correct(group, streams, problem, rng, "after"));
}

TEST(LoopbackRefusedHooks, BeforeCopyHook) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(small_shape(), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Options options = lb::options_for(algorithm);
    options.hooks.before_copy = [](int, int) {};
    const auto results = lb::run_ranks(
        group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
        std::string("before_copy hook with ") + to_string(algorithm));
    ASSERT_NO_FATAL_FAILURE(expect_refused_everywhere(results, problem, "hooks.before_copy"));
  }
  ASSERT_NO_FATAL_FAILURE(expect_normal_call_correct(group, streams, problem, rng, "after"));
}

}  // namespace
}  // namespace asynctp
