// The measured choice (Options::tune) on the CUDA loopback group: a GPU
// call is enqueued, so its time is its device work's (the events that bound
// it on the stream), read at the rank's next call. Which algorithm wins is
// the device's business; the tests check the sequence, that every time was
// read (none is zero), the agreement, and the answers.
//
//   LoopbackMeasuredChoice.BackToBackCallsMeasureThenKeep
//       all-gather + matmul, W = 2, twenty calls per rank back to back on
//       its stream with no synchronize between them (the next call waits
//       for the measuring one itself): the first calls measure the
//       candidates in turn, six rounds (the calls are short), the next
//       chooses from times that are all above zero, the rest keep it;
//       every rank ran the same algorithm in every call; the last call's
//       output is right.
//   LoopbackMeasuredChoice.MeasuresWhatRunsWhenForcedNotOnlyWhatWasPlanned
//       a shape the planner gives decomposed (too few tiles to overlap):
//       native and pipelined run when forced, so all three are measured,
//       every call checked.
//   LoopbackMeasuredChoice.ReduceScatterEveryCallChecked
//       matmul + reduce-scatter, W = 2, each of twenty calls on fresh inputs
//       and poisoned outputs, checked against the float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::gpu::DeviceRsProblem;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

constexpr int kWorld = 2;
constexpr int kCalls = kMaxTuningCalls + 2;

Options tuned() {
  Options options;
  options.tune = true;
  options.wait_timeout_ms = lb::kSafeWaitTimeoutMs;
  return options;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// One rank's calls, in order: the first ones measure the candidates in
// turn (three where native can run, else two), every other round in
// reverse, six rounds, as every shape
// of these tests is a short call (core::kShortCallFlops); the next chooses
// from times above zero; the rest keep the choice and its reason.
void expect_measured_then_kept(const std::vector<RunInfo>& infos) {
  constexpr int kRounds = 6;
  ASSERT_EQ(infos.size(), static_cast<std::size_t>(kCalls));
  std::vector<Algorithm> candidates;
  int measuring = 0;
  while (measuring < kCalls &&
         starts_with(infos[measuring].reason, "measured choice: measuring ")) {
    const RunInfo& info = infos[measuring];
    EXPECT_TRUE(starts_with(info.reason,
                            std::string("measured choice: measuring ") + to_string(info.algorithm)))
        << "call " << measuring + 1 << ": " << info.reason;
    ++measuring;
  }
  // The first round: every call until an algorithm comes again.
  for (int i = 0; i < measuring; ++i) {
    if (std::find(candidates.begin(), candidates.end(), infos[i].algorithm) != candidates.end()) {
      break;
    }
    candidates.push_back(infos[i].algorithm);
  }
  const int c = static_cast<int>(candidates.size());
  ASSERT_TRUE(c == 2 || c == 3) << c << " candidates";
  ASSERT_EQ(measuring, kRounds * c) << "measuring calls";
  for (int i = 0; i < measuring; ++i) {
    const int turn = (i / c) % 2 == 0 ? i % c : c - 1 - i % c;
    EXPECT_EQ(infos[i].algorithm, candidates[static_cast<std::size_t>(turn)]) << "call " << i + 1;
  }
  const std::string& chose = infos[measuring].reason;
  std::printf("  %s\n", chose.c_str());
  EXPECT_NE(chose.find("lower median of 6 calls"), std::string::npos) << chose;
  // The loopback's benchmark times a call as the mean over its ranks.
  EXPECT_NE(chose.find("the mean over ranks"), std::string::npos) << chose;
  for (Algorithm candidate : candidates) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(chose, m,
                                  std::regex(std::string(to_string(candidate)) + " ([0-9.]+) ms")))
        << chose;
    EXPECT_GT(std::stod(m[1].str()), 0.0) << to_string(candidate) << " was never timed: " << chose;
  }
  for (int i = measuring + 1; i < kCalls; ++i) {
    EXPECT_EQ(infos[i].algorithm, infos[measuring].algorithm) << "call " << i + 1;
    EXPECT_EQ(infos[i].reason, chose) << "call " << i + 1;
  }
}

class LoopbackMeasuredChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    ASYNCTP_REQUIRE_SM90();
    group_.emplace(lb::loopback_config(kWorld, Link::pcie));
    CUDA_ASSERT(streams_.create(kWorld));
  }

  // kCalls tuned calls of `problem`, each on poisoned outputs (after
  // `before_each`) and checked, with no synchronize between them (the next
  // call reads this one's time itself); every rank ran the same algorithm.
  // Rank 0's RunInfos, in order.
  template <class Problem, class BeforeEach>
  void checked_calls(Problem& problem, BeforeEach before_each, std::vector<RunInfo>* infos) {
    const Options options = tuned();
    for (int i = 0; i < kCalls; ++i) {
      SCOPED_TRACE("call " + std::to_string(i + 1));
      ASSERT_NO_FATAL_FAILURE(before_each());
      ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
      const auto results = lb::run_ranks(
          *group_, streams_,
          [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); }, "tuned call",
          /*sync=*/false);
      lb::expect_all_ok(results, results[0].info.algorithm);
      ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
      infos->push_back(results[0].info);
    }
  }

  lb::CleanPlannerEnv env_;
  const Seed seed_;
  std::mt19937_64 rng_ = seed_.rng();
  std::optional<LoopbackGroup> group_;
  RankStreams streams_;
};

TEST_F(LoopbackMeasuredChoice, BackToBackCallsMeasureThenKeep) {
  SCOPED_TRACE(seed_.note());
  LoopbackProblem problem(lb::loopback_shape(kWorld, 4096, 2048, 256, DType::bf16, false), rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  std::vector<std::vector<RunInfo>> infos(kWorld);
  const Options options = tuned();
  const auto results = lb::run_ranks(
      *group_, streams_,
      [&](Comm& comm, cudaStream_t s) {
        RunInfo last;
        for (int i = 0; i < kCalls; ++i) {
          last = problem.call(comm, options, s);
          infos[static_cast<std::size_t>(comm.rank())].push_back(last);
        }
        return last;
      },
      "twenty tuned calls back to back");
  lb::expect_all_ok(results);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_NO_FATAL_FAILURE(expect_measured_then_kept(infos[static_cast<std::size_t>(r)]));
    for (int i = 0; i < kCalls; ++i) {
      EXPECT_EQ(infos[static_cast<std::size_t>(r)][i].algorithm, infos[0][i].algorithm)
          << "call " << i + 1;
    }
  }
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

// A shape too small for the planner to overlap (it plans decomposed and
// offers the group nothing else), where native and pipelined still run when
// forced: the measured choice measures all three.
TEST_F(LoopbackMeasuredChoice, MeasuresWhatRunsWhenForcedNotOnlyWhatWasPlanned) {
  if (lb::single_hardware_queue()) {
    GTEST_SKIP() << "CUDA_DEVICE_MAX_CONNECTIONS=1: native cannot run in this process";
  }
  SCOPED_TRACE(seed_.note());
  LoopbackProblem problem(lb::loopback_shape(kWorld, 256, 512, 256), rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  ASSERT_EQ(problem.plan(group_->comm(0), Options{}).algorithm, Algorithm::decomposed);
  std::vector<RunInfo> infos;
  ASSERT_NO_FATAL_FAILURE(checked_calls(
      problem, [] {}, &infos));
  ASSERT_NO_FATAL_FAILURE(expect_measured_then_kept(infos));
  // Planned first, then the rest from the most ambitious down.
  EXPECT_EQ(infos[0].algorithm, Algorithm::decomposed);
  EXPECT_EQ(infos[1].algorithm, Algorithm::native);
  EXPECT_EQ(infos[2].algorithm, Algorithm::pipelined);
}

TEST_F(LoopbackMeasuredChoice, ReduceScatterEveryCallChecked) {
  SCOPED_TRACE(seed_.note());
  // On native's tile grid, so that every algorithm is a candidate.
  DeviceRsProblem problem(asynctp_test::rs_shape(kWorld, 2048, 1024, 512), rng_);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  std::vector<RunInfo> infos;
  ASSERT_NO_FATAL_FAILURE(checked_calls(
      problem, [&] { problem.refill(rng_); }, &infos));
  ASSERT_NO_FATAL_FAILURE(expect_measured_then_kept(infos));
}

}  // namespace
}  // namespace asynctp
