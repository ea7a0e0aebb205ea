// The measured choice's pure parts (core/tuning.hpp): one rank's tuner
// proposes each candidate in turn and then the lower median of each one's
// times; the group
// resolves every rank's proposal the same way; the agreement applies the
// resolution only where every rank can run what it names.
#include "core/tuning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/agreement.hpp"
#include "core/planner.hpp"

namespace asynctp::core {
namespace {

ProblemDesc problem(std::int64_t n = 256) {
  ProblemDesc p;
  p.world_size = 2;
  p.m = 256;
  p.n = n;
  p.k = 64;
  return p;
}

const unsigned kAll = kEveryAlgorithmBit;

TEST(CallTuner, ProposesEachCandidateInTurnThenItsLowerMedianTimes) {
  CallTuner tuner;
  // The planner's pick first, then the rest from the most ambitious down;
  // one call of each per round, odd rounds in reverse (no candidate always
  // after the same one).
  const std::vector<Algorithm> round = {Algorithm::pipelined, Algorithm::native,
                                        Algorithm::decomposed};
  static_assert(kTuneRunsPerCandidate == 2, "the times below assume two rounds");
  double ms = 10;
  for (int run = 0; run < kTuneRunsPerCandidate; ++run) {
    std::vector<Algorithm> order = round;
    if (run % 2 == 1) std::reverse(order.begin(), order.end());
    for (Algorithm expected : order) {
      SCOPED_TRACE(std::string(to_string(expected)) + " run " + std::to_string(run));
      const TuneProposal p = tuner.propose(problem(), Algorithm::pipelined, kAll);
      EXPECT_EQ(p.step, TuneStep::measure);
      EXPECT_EQ(p.algorithm, expected);
      tuner.measured(problem(), p.algorithm, ms);
      ms -= 1;  // the second round is the faster: of two, the faster is kept
    }
  }
  const TuneProposal done = tuner.propose(problem(), Algorithm::pipelined, kAll);
  EXPECT_EQ(done.step, TuneStep::complete);
  ASSERT_EQ(done.times.size(), 3u);
  // Times in call order 10 9 8 (round 0), 7 6 5 (round 1, reversed).
  EXPECT_EQ(done.times[0].algorithm, Algorithm::pipelined);
  EXPECT_DOUBLE_EQ(done.times[0].ms, 5);
  EXPECT_EQ(done.times[1].algorithm, Algorithm::native);
  EXPECT_DOUBLE_EQ(done.times[1].ms, 6);
  EXPECT_EQ(done.times[2].algorithm, Algorithm::decomposed);
  EXPECT_DOUBLE_EQ(done.times[2].ms, 7);
  // Another problem has its own state.
  EXPECT_EQ(tuner.propose(problem(512), Algorithm::native, kAll).algorithm, Algorithm::native);
  EXPECT_EQ(tuner.kept_reason(problem()), "");
  tuner.keep(problem(), Algorithm::decomposed, "measured: decomposed");
  const TuneProposal kept = tuner.propose(problem(), Algorithm::pipelined, kAll);
  EXPECT_EQ(kept.step, TuneStep::kept);
  EXPECT_EQ(kept.algorithm, Algorithm::decomposed);
  EXPECT_EQ(tuner.kept_reason(problem()), "measured: decomposed");
  EXPECT_EQ(tuner.kept_reason(problem(512)), "");
}

// Measuring calls run back to back and their times come in later (a GPU
// call's once its work has finished): each is timed into its own slot,
// counted for the problem and algorithm it started with when read, and the
// group's choice waits until every candidate's times are read. A time that
// is lost (its work failed) or a call that never ran leaves its candidate
// to be measured again.
TEST(CallTuner, TimesReadLaterCountForTheCallThatStartedThem) {
  CallTuner tuner;
  std::map<int, std::optional<double>> clock;  // slot -> time, once "finished"
  const auto read = [&](int slot) { return clock[slot]; };
  EXPECT_FALSE(tuner.awaiting());
  std::vector<int> slots;
  // Six calls back to back, none finished yet: each candidate twice, in turn
  // (the second round in reverse).
  for (Algorithm expected : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed,
                             Algorithm::decomposed, Algorithm::pipelined, Algorithm::native}) {
    EXPECT_FALSE(tuner.waits_for_times(problem()));
    const TuneProposal p = tuner.propose(problem(), Algorithm::native, kAll);
    ASSERT_EQ(p.step, TuneStep::measure);
    ASSERT_EQ(p.algorithm, expected);
    const std::optional<int> slot = tuner.start(problem(), p.algorithm);
    ASSERT_TRUE(slot.has_value());
    EXPECT_TRUE(std::find(slots.begin(), slots.end(), *slot) == slots.end()) << "slot reused";
    slots.push_back(*slot);
    tuner.read_times(read, /*waited=*/false);  // nothing finished: all kept
  }
  EXPECT_TRUE(tuner.awaiting());
  // The group cannot choose yet: the times are not in.
  EXPECT_TRUE(tuner.waits_for_times(problem()));
  EXPECT_EQ(tuner.propose(problem(), Algorithm::native, kAll).step, TuneStep::none);
  // Another problem is not held up by this one's.
  EXPECT_FALSE(tuner.waits_for_times(problem(512)));
  // Some finish: read without waiting.
  const double times[] = {5, 3, 6, 4, 3.5, 7};
  for (int i : {0, 1, 2}) clock[slots[static_cast<std::size_t>(i)]] = times[i];
  tuner.read_times(read, false);
  EXPECT_TRUE(tuner.waits_for_times(problem()));
  // The rest: native's second time (the last call) is lost, the wait gives
  // nothing.
  clock[slots[3]] = times[3];
  clock[slots[4]] = times[4];
  tuner.read_times(read, /*waited=*/true);
  EXPECT_FALSE(tuner.awaiting());
  EXPECT_FALSE(tuner.waits_for_times(problem()));
  TuneProposal p = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(p.step, TuneStep::measure);
  EXPECT_EQ(p.algorithm, Algorithm::native);
  // Started, but its execute() failed: measured again.
  const std::optional<int> failed = tuner.start(problem(), Algorithm::native);
  ASSERT_TRUE(failed.has_value());
  tuner.cancel(*failed);
  EXPECT_FALSE(tuner.awaiting());
  EXPECT_EQ(tuner.propose(problem(), Algorithm::native, kAll).algorithm, Algorithm::native);
  const std::optional<int> again = tuner.start(problem(), Algorithm::native);
  ASSERT_TRUE(again.has_value());
  clock[*again] = 6.5;
  tuner.read_times(read, false);
  p = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(p.step, TuneStep::complete);
  ASSERT_EQ(p.times.size(), 3u);
  EXPECT_DOUBLE_EQ(p.times[0].ms, 5);  // native: the lower of 5, 6.5
  EXPECT_DOUBLE_EQ(p.times[1].ms, 3);  // pipelined: the lower of 3, 3.5
  EXPECT_DOUBLE_EQ(p.times[2].ms, 4);  // decomposed: the lower of 6, 4
}

TEST(LowerMedian, IsTheLowerOfTheTwoMiddleValues) {
  EXPECT_DOUBLE_EQ(lower_median({}), 0);
  EXPECT_DOUBLE_EQ(lower_median({3}), 3);
  EXPECT_DOUBLE_EQ(lower_median({5, 2}), 2);
  EXPECT_DOUBLE_EQ(lower_median({4, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(lower_median({3.0, 1.2, 0.9, 1.1, 1.0, 1.05}), 1.05);
}

// Six calls each (a short call's count): one lucky call does not make a
// candidate whose calls spread widely look faster than a steady one, and a
// first call's one-time cost does not count against a candidate.
TEST(CallTuner, RanksSixCallsByTheirLowerMedianNotTheLuckiestCall) {
  static_assert(kShortCallTuneRuns == 6, "the times below are six per candidate");
  std::map<Algorithm, std::vector<double>> times = {
      {Algorithm::native, {3.0, 1.10, 1.12, 1.09, 1.11, 1.13}},  // a slow first call
      {Algorithm::pipelined, {1.30, 0.84, 1.50, 1.20, 1.60, 1.40}},
      {Algorithm::decomposed, {0.95, 0.96, 0.94, 0.97, 0.95, 0.96}},
  };
  std::map<Algorithm, std::size_t> next;
  std::map<int, std::optional<double>> clock;
  const auto read = [&](int slot) { return clock[slot]; };
  CallTuner tuner;
  TuneProposal p;
  for (int call = 0; call < 3 * kShortCallTuneRuns; ++call) {
    p = tuner.propose(problem(), Algorithm::native, kAll);
    ASSERT_EQ(p.step, TuneStep::measure) << "call " << call;
    const std::optional<int> slot = tuner.start(problem(), p.algorithm, kShortCallTuneRuns);
    ASSERT_TRUE(slot.has_value());
    clock[*slot] = times[p.algorithm].at(next[p.algorithm]++);
    tuner.read_times(read, false);
  }
  p = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(p.step, TuneStep::complete);
  ASSERT_EQ(p.times.size(), 3u);
  EXPECT_DOUBLE_EQ(p.times[0].ms, 1.11);  // native: its first call does not count
  EXPECT_DOUBLE_EQ(p.times[1].ms, 1.30);  // pipelined: not its lucky 0.84
  EXPECT_DOUBLE_EQ(p.times[2].ms, 0.95);
  const TuneVerdict v = resolve_tuning({p}, kShortCallTuneRuns);
  EXPECT_EQ(v.action, TuneAction::choose);
  EXPECT_EQ(v.algorithm, Algorithm::decomposed) << v.reason;
  EXPECT_NE(v.reason.find("lower median of 6 calls"), std::string::npos) << v.reason;
}

// A read that fails (the transport's wait threw) keeps what was read before
// it and leaves the rest unread; abandon() then forgets those.
TEST(CallTuner, AFailedReadKeepsWhatWasReadBeforeIt) {
  CallTuner tuner;
  std::vector<int> slots;
  for (int i = 0; i < 3; ++i) {
    const TuneProposal p = tuner.propose(problem(), Algorithm::native, kAll);
    ASSERT_EQ(p.step, TuneStep::measure);
    slots.push_back(tuner.start(problem(), p.algorithm).value());
  }
  const auto failing = [&](int slot) -> std::optional<double> {
    if (slot == slots[0]) return 2.0;
    throw std::runtime_error("device work failed");
  };
  EXPECT_THROW(tuner.read_times(failing, true), std::runtime_error);
  EXPECT_TRUE(tuner.awaiting());
  tuner.abandon();
  EXPECT_FALSE(tuner.awaiting());
  // Native's first run counted; pipelined's and decomposed's first runs are
  // measured again, then the second round (in reverse) ends with native's.
  for (Algorithm expected : {Algorithm::pipelined, Algorithm::decomposed, Algorithm::decomposed,
                             Algorithm::pipelined, Algorithm::native}) {
    const TuneProposal p = tuner.propose(problem(), Algorithm::native, kAll);
    ASSERT_EQ(p.step, TuneStep::measure);
    EXPECT_EQ(p.algorithm, expected);
    tuner.start(problem(), p.algorithm);
  }
}

// Every slot holds an unread time: start() says so, and slot_free() lets
// the call flow wait for them before it proposes another measuring call.
// abandon() forgets them all, and their candidates are measured again.
TEST(CallTuner, SlotsRunOutUntilTimesAreReadOrAbandoned) {
  CallTuner tuner;
  for (int i = 0; i < kTimedCallSlots; ++i) {
    ASSERT_TRUE(tuner.slot_free());
    ASSERT_TRUE(tuner.start(problem(256 * (i + 1)), Algorithm::native).has_value());
  }
  EXPECT_FALSE(tuner.slot_free());
  EXPECT_FALSE(tuner.start(problem(), Algorithm::native).has_value());
  tuner.abandon();
  EXPECT_FALSE(tuner.awaiting());
  EXPECT_TRUE(tuner.slot_free());
  const TuneProposal p = tuner.propose(problem(256), Algorithm::native, kAll);
  EXPECT_EQ(p.step, TuneStep::measure);
  EXPECT_EQ(p.algorithm, Algorithm::native);
}

TEST(CallTuner, OneCandidateHasNothingToMeasure) {
  CallTuner tuner;
  EXPECT_EQ(
      tuner.propose(problem(), Algorithm::decomposed, algorithm_bit(Algorithm::decomposed)).step,
      TuneStep::none);
}

// The group's calls per candidate arrive with the first measuring call
// (start's `runs`) and hold for the problem: short calls get six rounds.
TEST(CallTuner, TheGroupsRunsPerCandidateDecideWhenTheTimesAreComplete) {
  CallTuner tuner;
  for (int run = 0; run < kShortCallTuneRuns; ++run) {
    const bool forward = run % 2 == 0;
    for (Algorithm expected : {forward ? Algorithm::native : Algorithm::decomposed,
                               forward ? Algorithm::decomposed : Algorithm::native}) {
      SCOPED_TRACE(std::string(to_string(expected)) + " run " + std::to_string(run));
      EXPECT_FALSE(tuner.waits_for_times(problem()));
      const TuneProposal p =
          tuner.propose(problem(), Algorithm::native,
                        algorithm_bit(Algorithm::native) | algorithm_bit(Algorithm::decomposed));
      ASSERT_EQ(p.step, TuneStep::measure);
      ASSERT_EQ(p.algorithm, expected);
      // The group says six at every measuring call; later calls say no less.
      ASSERT_TRUE(tuner.start(problem(), p.algorithm, run == 0 ? kShortCallTuneRuns : 2));
    }
  }
  EXPECT_TRUE(tuner.waits_for_times(problem()));
  double ms = 9;
  tuner.read_times([&](int) { return std::optional<double>(ms -= 0.5); }, true);
  const TuneProposal done = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(done.step, TuneStep::complete);
  ASSERT_EQ(done.times.size(), 2u);
  // Read in start order, 8.5 down to 3.0: native's six (n d, d n, ...) are
  // 8.5 7 6.5 5 4.5 3, decomposed's 8 7.5 6 5.5 4 3.5; each one's lower
  // median is its third fastest.
  static_assert(kShortCallTuneRuns == 6, "the times above are six per candidate");
  EXPECT_DOUBLE_EQ(done.times[0].ms, 5.0);
  EXPECT_DOUBLE_EQ(done.times[1].ms, 5.5);
}

TEST(TuneRuns, ShortCallsGetMoreRunsPerCandidate) {
  EXPECT_EQ(tune_runs_per_candidate(1e9), kShortCallTuneRuns);
  EXPECT_EQ(tune_runs_per_candidate(kShortCallFlops * 0.99), kShortCallTuneRuns);
  EXPECT_EQ(tune_runs_per_candidate(kShortCallFlops), kTuneRunsPerCandidate);
  EXPECT_EQ(tune_runs_per_candidate(1e13), kTuneRunsPerCandidate);
  EXPECT_LE(kShortCallTuneRuns * 3, kMaxTuningCalls);
  EXPECT_LT(kMaxTuningCalls, kTimedCallSlots);
}

TuneProposal measure(Algorithm a) { return {TuneStep::measure, a, {}}; }
TuneProposal complete(double native, double pipelined) {
  return {TuneStep::complete,
          Algorithm::decomposed,
          {{Algorithm::native, native}, {Algorithm::pipelined, pipelined}}};
}

TEST(ResolveTuning, MeasuresOnlyWhatEveryRankProposes) {
  const TuneVerdict same = resolve_tuning({measure(Algorithm::native), measure(Algorithm::native)});
  EXPECT_EQ(same.action, TuneAction::measure);
  EXPECT_EQ(same.algorithm, Algorithm::native);
  EXPECT_NE(same.reason.find("measuring native"), std::string::npos) << same.reason;
  EXPECT_EQ(same.runs, kTuneRunsPerCandidate);
  const TuneVerdict six =
      resolve_tuning({measure(Algorithm::native), measure(Algorithm::native)}, 6);
  EXPECT_EQ(six.runs, 6);
  EXPECT_NE(six.reason.find("gets 6 calls"), std::string::npos) << six.reason;
  EXPECT_EQ(resolve_tuning({measure(Algorithm::native), measure(Algorithm::pipelined)}).action,
            TuneAction::none);
  EXPECT_EQ(resolve_tuning({measure(Algorithm::native), TuneProposal{}}).action, TuneAction::none);
  EXPECT_EQ(resolve_tuning({measure(Algorithm::native), complete(1, 2)}).action, TuneAction::none);
}

TEST(ResolveTuning, ChoosesTheLeastOfEachCandidatesSlowestRank) {
  // Rank 0 alone would pick native (1 ms); its peer is slow there (3 ms), so
  // the group's call takes 3 ms with native and 2.1 with pipelined.
  const TuneVerdict v = resolve_tuning({complete(1.0, 2.0), complete(3.0, 2.1)});
  EXPECT_EQ(v.action, TuneAction::choose);
  EXPECT_EQ(v.algorithm, Algorithm::pipelined);
  EXPECT_NE(v.reason.find("native 3.000 ms, pipelined 2.100 ms"), std::string::npos) << v.reason;
  EXPECT_NE(resolve_tuning({complete(1.0, 2.0)}, 6).reason.find("lower median of 6 calls"),
            std::string::npos);
  // A tie goes to the earlier candidate (the planner's pick comes first).
  EXPECT_EQ(resolve_tuning({complete(2.0, 2.0)}).algorithm, Algorithm::native);
  // Ranks that timed other candidates do not decide.
  TuneProposal other = complete(1.0, 2.0);
  other.times[1].algorithm = Algorithm::decomposed;
  EXPECT_EQ(resolve_tuning({complete(1.0, 2.0), other}).action, TuneAction::none);
}

TuneProposal complete_mean(double native, double pipelined) {
  TuneProposal p = complete(native, pipelined);
  p.group_time = GroupTime::mean_over_ranks;
  return p;
}

TEST(ResolveTuning, ChoosesTheLeastMeanOverRanksWhereEveryRankTimesSo) {
  // The slowest rank would pick pipelined (2.1 against native's 3.0); the
  // mean over ranks picks native (2.0 against 2.05).
  const TuneVerdict v = resolve_tuning({complete_mean(1.0, 2.0), complete_mean(3.0, 2.1)}, 6);
  EXPECT_EQ(v.action, TuneAction::choose);
  EXPECT_EQ(v.algorithm, Algorithm::native);
  EXPECT_NE(v.reason.find("native 2.000 ms, pipelined 2.050 ms"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("the mean over ranks of each rank's lower median of 6 calls"),
            std::string::npos)
      << v.reason;
  // The slowest rank's times stand beside them, without a unit.
  EXPECT_NE(v.reason.find("the slowest rank's: native 3.000, pipelined 2.100;"), std::string::npos)
      << v.reason;
  // One rank that times by its slowest rank makes the group do so.
  const TuneVerdict mixed = resolve_tuning({complete_mean(1.0, 2.0), complete(3.0, 2.1)});
  EXPECT_EQ(mixed.algorithm, Algorithm::pipelined);
  EXPECT_NE(mixed.reason.find("the slowest rank's lower median of"), std::string::npos)
      << mixed.reason;
}

TEST(CallTuner, ProposalsSayHowTheTransportTimesTheGroup) {
  CallTuner tuner;
  const ProblemDesc p = problem();
  EXPECT_EQ(tuner.propose(p, Algorithm::native, kAll).group_time, GroupTime::slowest_rank);
  tuner.set_group_time(GroupTime::mean_over_ranks);
  EXPECT_EQ(tuner.propose(p, Algorithm::native, kAll).group_time, GroupTime::mean_over_ranks);
}

TEST(ResolveTuning, KeepsWhatEveryRankKept) {
  const TuneProposal kept{TuneStep::kept, Algorithm::pipelined, {}};
  EXPECT_EQ(resolve_tuning({kept, kept}).action, TuneAction::kept);
  EXPECT_EQ(resolve_tuning({kept, kept}).algorithm, Algorithm::pipelined);
  const TuneProposal other{TuneStep::kept, Algorithm::native, {}};
  EXPECT_EQ(resolve_tuning({kept, other}).action, TuneAction::none);
}

CallRecord record(int rank, Algorithm planned, unsigned runnable, TuneProposal tune) {
  CallRecord r;
  r.ok = true;
  r.world_size = 2;
  r.problem = problem();
  r.problem.rank = rank;
  r.plan.algorithm = planned;
  r.plan.runnable = runnable;
  r.plan.reason = "the planner's reason";
  r.tune = std::move(tune);
  return r;
}

TEST(AgreedPlan, TheMeasuredChoiceRunsWhereEveryRankProposesIt) {
  const std::vector<CallRecord> records = {
      record(0, Algorithm::native, kAll, measure(Algorithm::pipelined)),
      record(1, Algorithm::native, kAll, measure(Algorithm::pipelined))};
  for (int rank : {0, 1}) {
    const Plan plan = agreed_plan(records, rank);
    EXPECT_EQ(plan.algorithm, Algorithm::pipelined);
    EXPECT_EQ(plan.tune, TuneAction::measure);
    EXPECT_EQ(plan.tune_runs, kShortCallTuneRuns);  // 2 * 512 * 256 * 64 flops
    EXPECT_NE(plan.reason.find("the planner's reason"), std::string::npos) << plan.reason;
  }
  // A rank that cannot run the candidate does not propose it (its tuner's
  // candidates are what it can run): the group's own plan, untuned.
  std::vector<CallRecord> narrow = records;
  narrow[1].plan.algorithm = Algorithm::decomposed;
  narrow[1].plan.runnable = algorithm_bit(Algorithm::decomposed);
  narrow[1].tune = TuneProposal{};
  const Plan plan = agreed_plan(narrow, 0);
  EXPECT_EQ(plan.algorithm, Algorithm::decomposed);
  EXPECT_EQ(plan.tune, TuneAction::none);
}

// The runs per candidate come from the group's largest GEMM, so that ranks
// whose K-slices differ (reduce-scatter) count the same.
TEST(AgreedPlan, RunsPerCandidateFollowTheLargestRanksCall) {
  std::vector<CallRecord> records = {
      record(0, Algorithm::native, kAll, measure(Algorithm::native)),
      record(1, Algorithm::native, kAll, measure(Algorithm::native))};
  for (CallRecord& r : records) r.problem.op = OpKind::matmul_reduce_scatter;
  records[1].problem.k = static_cast<std::int64_t>(kShortCallFlops / (2.0 * 512 * 256)) + 1;
  ASSERT_LT(records[0].problem.flops(), kShortCallFlops);
  ASSERT_GE(records[1].problem.flops(), kShortCallFlops);
  for (int rank : {0, 1}) EXPECT_EQ(agreed_plan(records, rank).tune_runs, kTuneRunsPerCandidate);
}

}  // namespace
}  // namespace asynctp::core
