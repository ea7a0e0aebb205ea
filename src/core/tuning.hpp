// Measured choice (ASYNCTP_TUNE=on): under auto, the first calls of a
// problem on a communicator run each algorithm the group can run, time them,
// and the group keeps the fastest for that problem. The cost model predicts
// each algorithm to some 15 % on a device whose clocks move with load and on
// hosts whose per-call costs differ (bench/NOTES.md); the decisions it must
// make are within a few %. Every algorithm gives the right answer, so the
// calls that measure are ordinary calls, only not yet the fastest.
//
// The group must run the same algorithm in every call. Each rank's tuner
// proposes (its record of the agreement step carries the proposal), and the
// group resolves the proposals the same way on every rank (resolve_tuning,
// from the records alone): a candidate runs only when every rank proposes
// it, and the kept algorithm is the one whose group time was least, from the
// times every rank published: the slowest rank's, or on a transport whose
// benchmark times a call as the mean over its ranks (the loopback group), that
// mean (GroupTime). Where the proposals differ (a rank that
// cannot run a candidate, or ranks whose problems differ between calls), the
// call runs the agreed plan and measures nothing.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "asynctp/options.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

// Calls per candidate. The first run of an algorithm may pay one-time costs
// (a library handle, a workspace, a kernel's first load), so each gets at
// least two. Short calls get more: under about a tenth of a millisecond the
// algorithms lie within 5-15 % of each other while one algorithm's time
// moves 5-10 % from call to call (bench/NOTES.md), and two calls do not see
// through that.
//
// A candidate's time is the lower median of its calls (the lower of the two
// middle ones): of two calls the faster, so that one call's one-time costs
// do not count; of six the third fastest, so that neither a first call's
// costs nor one lucky call decides. The benchmark that judges the choice
// reports each algorithm's median over its calls; a candidate whose calls
// spread widely is charged its typical call, not its luckiest.
inline constexpr int kTuneRunsPerCandidate = 2;
inline constexpr int kShortCallTuneRuns = 6;
// A call is short where the group's largest GEMM does fewer flops than this
// (about 0.3 ms of an H100's dense bf16 peak).
inline constexpr double kShortCallFlops = 2e11;
static_assert(kShortCallTuneRuns * 3 == kMaxTuningCalls, "asynctp/options.hpp states it");

// The group's calls per candidate, from its largest GEMM's flops (the same
// on every rank when taken over every rank's problem).
int tune_runs_per_candidate(double largest_flops) noexcept;

// Measuring calls whose times may be unread at once, per rank: one problem's
// (kMaxTuningCalls) and a few of problems interleaved with it.
inline constexpr int kTimedCallSlots = kMaxTuningCalls + 6;

// What a rank's tuner says of its next call of a problem.
enum class TuneStep : std::uint8_t {
  none,      // nothing to measure (tuning off, or one candidate)
  measure,   // run `algorithm` and time it
  complete,  // every candidate timed: `times` holds this rank's lower median of each
  kept,      // the group chose `algorithm` for this problem
};

// How the group's time of a candidate comes from its ranks' times (each
// rank's best call of the candidate). A collective's ranks on their own
// devices wait for each other, so the slowest rank's time is the call's. The
// loopback group's ranks run one after another on one device, each as if it
// had the device alone, and its benchmark reports the mean over ranks of
// their spans: there the slowest rank's time charges a candidate for how its
// ranks' spans spread, which the benchmark does not (bench/NOTES.md).
enum class GroupTime : std::uint8_t { slowest_rank, mean_over_ranks };

// The lower median of `ms` (the lower of the two middle values; 0 when
// empty): the statistic a candidate's calls are ranked by.
double lower_median(std::vector<double> ms);

struct TunedTime {
  Algorithm algorithm = Algorithm::decomposed;
  double ms = 0;
};

struct TuneProposal {
  TuneStep step = TuneStep::none;
  Algorithm algorithm = Algorithm::decomposed;     // measure: the candidate; kept: the choice
  std::vector<TunedTime> times;                    // complete: in candidate order
  GroupTime group_time = GroupTime::slowest_rank;  // how the group combines `times`
};

// What a tuned call does, resolved from every rank's proposal.
enum class TuneAction : std::uint8_t {
  none,     // not tuned: the agreed plan runs
  measure,  // the candidate runs; the rank times it (CallTuner::measured)
  choose,   // the group's choice runs; the rank keeps it (CallTuner::keep)
  kept,     // the kept choice runs
};

struct TuneVerdict {
  TuneAction action = TuneAction::none;
  Algorithm algorithm = Algorithm::decomposed;
  int runs = kTuneRunsPerCandidate;  // the group's calls per candidate
  std::string reason;                // for the plan's reason; empty for TuneAction::none
};

// The same verdict on every rank, from the proposals in rank order and the
// group's calls per candidate (`runs`): measure when every rank proposes the
// same candidate; choose when every rank has
// timed the same candidates (the least group time, a tie to the earlier
// candidate: the mean over ranks where every proposal says mean_over_ranks,
// else the slowest rank's); kept when every rank keeps the same algorithm;
// otherwise none.
TuneVerdict resolve_tuning(const std::vector<TuneProposal>& proposals,
                           int runs = kTuneRunsPerCandidate);

// One rank's measurements, per problem. Not thread-safe: a rank's calls are
// made one at a time.
class CallTuner {
 public:
  // How this rank's transport times a call of the group: its proposals say it.
  void set_group_time(GroupTime group_time) noexcept { group_time_ = group_time; }
  // The proposal for this rank's next call of `problem`, whose own plan
  // chose `planned` and can run `runnable` (algorithm_bit). The candidates,
  // fixed at the first call of a problem: `planned`, then the rest of
  // `runnable` from the most ambitious down. They are measured in turn, one
  // call each per round, so that a device's clocks drifting over the
  // measuring calls weigh on every candidate alike; odd rounds take them in
  // reverse, so that no candidate always follows the same one.
  TuneProposal propose(const ProblemDesc& problem, Algorithm planned, unsigned runnable);
  // The algorithm bits of `problem`'s candidates (0 before its first proposal).
  unsigned candidate_bits(const ProblemDesc& problem) const;
  // Whether `problem` has been proposed for (its candidates are fixed).
  bool knows(const ProblemDesc& problem) const { return entries_.count(key_of(problem)) != 0; }
  // This rank's time of a call that ran `algorithm` for `problem`
  // (read_times gives it a started call's; a test may give it directly).
  void measured(const ProblemDesc& problem, Algorithm algorithm, double ms);
  // The group chose `algorithm` for `problem`, for `reason` (the measured
  // times, the same on every rank): later calls of the problem say it too.
  void keep(const ProblemDesc& problem, Algorithm algorithm, const std::string& reason);
  // The reason of the choice kept for `problem` ("" when none is kept).
  std::string kept_reason(const ProblemDesc& problem) const;

  // A measuring call's time is known once its work has finished, which on a
  // GPU is after the call returns. So that measuring calls run back to back
  // as a problem's calls do (a wait before each would start it on an idle
  // device, and time the host's enqueue with it), each is timed into a slot
  // of the transport's clock (Transport::time_next_call) and its time read
  // later (Transport::timed_call_ms), at the latest when the group must
  // choose.
  //
  // The slot a measuring call of `algorithm` for `problem` is timed into,
  // or nullopt when every slot holds a time still to be read. `runs`: the
  // group's calls per candidate (TuneVerdict::runs), the same at every
  // measuring call of the problem.
  std::optional<int> start(const ProblemDesc& problem, Algorithm algorithm,
                           int runs = kTuneRunsPerCandidate);
  // The call started for `slot` did not run (its execute() failed).
  void cancel(int slot);
  // Reads the started calls' times: read(slot) is the time, or nullopt
  // while the call runs. `waited`: read waited for the calls, so a nullopt
  // means the time is lost, and its candidate is measured again.
  void read_times(const std::function<std::optional<double>(int slot)>& read, bool waited);
  // Whether some started call's time is still to be read.
  bool awaiting() const noexcept { return !started_.empty(); }
  // Whether start() would find a slot.
  bool slot_free() const noexcept { return started_.size() < kTimedCallSlots; }
  // Whether `problem`'s next proposal needs times still to be read: every
  // candidate's runs have started, and some have not been read.
  bool waits_for_times(const ProblemDesc& problem) const;
  // Forgets every time still to be read (their work failed): their
  // candidates are measured again.
  void abandon() noexcept;

 private:
  using Key = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, int, int, bool>;
  struct Entry {
    std::vector<Algorithm> candidates;
    std::array<int, 3> started{};                // runs started, read or not; by Algorithm's value
    std::array<std::vector<double>, 3> times{};  // ms of each run whose time was read
    int runs_wanted = kTuneRunsPerCandidate;     // per candidate, as the group said
    std::optional<Algorithm> kept;
    std::string kept_reason;
  };
  static Key key_of(const ProblemDesc& problem);
  GroupTime group_time_ = GroupTime::slowest_rank;
  std::map<Key, Entry> entries_;
  struct Started {
    ProblemDesc problem;
    Algorithm algorithm;
    int slot;
  };
  std::vector<Started> started_;  // oldest first
  // A started run that will not be read: its candidate is measured again.
  void forget(const Started& s) noexcept;
};

}  // namespace asynctp::core
