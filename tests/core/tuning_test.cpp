// The measured choice's pure parts (core/tuning.hpp): one rank's tuner
// proposes each candidate in turn and then its best times; the group
// resolves every rank's proposal the same way; the agreement applies the
// resolution only where every rank can run what it names.
#include "core/tuning.hpp"

#include <gtest/gtest.h>

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

TEST(CallTuner, ProposesEachCandidateInTurnThenItsBestTimes) {
  CallTuner tuner;
  const std::vector<Algorithm> order = {Algorithm::pipelined, Algorithm::native,
                                        Algorithm::decomposed};
  double ms = 10;
  for (Algorithm expected : order) {
    for (int run = 0; run < kTuneRunsPerCandidate; ++run) {
      SCOPED_TRACE(std::string(to_string(expected)) + " run " + std::to_string(run));
      // The planner's pick first, then the rest from the most ambitious down.
      const TuneProposal p = tuner.propose(problem(), Algorithm::pipelined, kAll);
      EXPECT_EQ(p.step, TuneStep::measure);
      EXPECT_EQ(p.algorithm, expected);
      tuner.measured(problem(), p.algorithm, ms);
      ms -= 1;  // the second run is the faster: the best is kept
    }
  }
  const TuneProposal done = tuner.propose(problem(), Algorithm::pipelined, kAll);
  EXPECT_EQ(done.step, TuneStep::complete);
  ASSERT_EQ(done.times.size(), 3u);
  EXPECT_EQ(done.times[0].algorithm, Algorithm::pipelined);
  EXPECT_DOUBLE_EQ(done.times[0].ms, 9);
  EXPECT_EQ(done.times[1].algorithm, Algorithm::native);
  EXPECT_DOUBLE_EQ(done.times[1].ms, 7);
  EXPECT_EQ(done.times[2].algorithm, Algorithm::decomposed);
  EXPECT_DOUBLE_EQ(done.times[2].ms, 5);
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

// A call's time read after it returned (a GPU call's, at the rank's next
// call) counts for the problem and algorithm it started with, whatever was
// proposed in between; a time that could not be read leaves the candidate
// to be measured again.
TEST(CallTuner, AStartedCallCountsWhenFinishedAndNotWhenAbandoned) {
  CallTuner tuner;
  EXPECT_FALSE(tuner.awaiting());
  TuneProposal p = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(p.step, TuneStep::measure);
  ASSERT_EQ(p.algorithm, Algorithm::native);
  tuner.started(problem(), Algorithm::native);
  EXPECT_TRUE(tuner.awaiting());
  // Another problem's call comes first: the first problem's time is read then.
  EXPECT_EQ(tuner.propose(problem(512), Algorithm::pipelined, kAll).algorithm,
            Algorithm::pipelined);
  tuner.finished(4.0);
  EXPECT_FALSE(tuner.awaiting());
  tuner.finished(1.0);  // nothing started: ignored
  tuner.started(problem(), Algorithm::native);
  tuner.abandon();
  EXPECT_FALSE(tuner.awaiting());
  // One native run counted (the abandoned one did not): native is proposed again.
  p = tuner.propose(problem(), Algorithm::native, kAll);
  EXPECT_EQ(p.step, TuneStep::measure);
  EXPECT_EQ(p.algorithm, Algorithm::native);
  tuner.started(problem(), Algorithm::native);
  tuner.finished(6.0);
  for (Algorithm a :
       {Algorithm::pipelined, Algorithm::pipelined, Algorithm::decomposed, Algorithm::decomposed}) {
    p = tuner.propose(problem(), Algorithm::native, kAll);
    ASSERT_EQ(p.algorithm, a);
    tuner.started(problem(), a);
    tuner.finished(5.0);
  }
  p = tuner.propose(problem(), Algorithm::native, kAll);
  ASSERT_EQ(p.step, TuneStep::complete);
  ASSERT_EQ(p.times.size(), 3u);
  EXPECT_DOUBLE_EQ(p.times[0].ms, 4.0);  // native's best of the two that finished
}

TEST(CallTuner, OneCandidateHasNothingToMeasure) {
  CallTuner tuner;
  EXPECT_EQ(
      tuner.propose(problem(), Algorithm::decomposed, algorithm_bit(Algorithm::decomposed)).step,
      TuneStep::none);
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
  // A tie goes to the earlier candidate (the planner's pick comes first).
  EXPECT_EQ(resolve_tuning({complete(2.0, 2.0)}).algorithm, Algorithm::native);
  // Ranks that timed other candidates do not decide.
  TuneProposal other = complete(1.0, 2.0);
  other.times[1].algorithm = Algorithm::decomposed;
  EXPECT_EQ(resolve_tuning({complete(1.0, 2.0), other}).action, TuneAction::none);
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

TEST(AgreedPlan, TheMeasuredChoiceRunsWhereEveryRankCanRunIt) {
  const std::vector<CallRecord> records = {
      record(0, Algorithm::native, kAll, measure(Algorithm::pipelined)),
      record(1, Algorithm::native, kAll, measure(Algorithm::pipelined))};
  for (int rank : {0, 1}) {
    const Plan plan = agreed_plan(records, rank);
    EXPECT_EQ(plan.algorithm, Algorithm::pipelined);
    EXPECT_EQ(plan.tune, TuneAction::measure);
    EXPECT_NE(plan.reason.find("the planner's reason"), std::string::npos) << plan.reason;
  }
  // A rank that cannot run the candidate: the group's own plan, untuned.
  std::vector<CallRecord> narrow = records;
  narrow[1].plan.algorithm = Algorithm::decomposed;
  narrow[1].plan.runnable = algorithm_bit(Algorithm::decomposed);
  const Plan plan = agreed_plan(narrow, 0);
  EXPECT_EQ(plan.algorithm, Algorithm::decomposed);
  EXPECT_EQ(plan.tune, TuneAction::none);
}

}  // namespace
}  // namespace asynctp::core
