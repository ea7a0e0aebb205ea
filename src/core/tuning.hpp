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
// it, and the kept algorithm is the one whose slowest rank was fastest, from
// the times every rank published. Where the proposals differ (a rank that
// cannot run a candidate, or ranks whose problems differ between calls), the
// call runs the agreed plan and measures nothing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "asynctp/options.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

// Calls per candidate: the first run of an algorithm may pay one-time costs
// (a library handle, a workspace, a kernel's first load); the best of two
// is kept.
inline constexpr int kTuneRunsPerCandidate = 2;
static_assert(kTuneRunsPerCandidate * 3 == kMaxTuningCalls, "asynctp/options.hpp states it");

// What a rank's tuner says of its next call of a problem.
enum class TuneStep : std::uint8_t {
  none,      // nothing to measure (tuning off, or one candidate)
  measure,   // run `algorithm` and time it
  complete,  // every candidate timed: `times` holds this rank's best of each
  kept,      // the group chose `algorithm` for this problem
};

struct TunedTime {
  Algorithm algorithm = Algorithm::decomposed;
  double ms = 0;
};

struct TuneProposal {
  TuneStep step = TuneStep::none;
  Algorithm algorithm = Algorithm::decomposed;  // measure: the candidate; kept: the choice
  std::vector<TunedTime> times;                 // complete: in candidate order
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
  std::string reason;  // for the plan's reason; empty for TuneAction::none
};

// The same verdict on every rank, from the proposals in rank order: measure
// when every rank proposes the same candidate; choose when every rank has
// timed the same candidates (the least of each candidate's slowest rank's
// time, a tie to the earlier candidate); kept when every rank keeps the same
// algorithm; otherwise none.
TuneVerdict resolve_tuning(const std::vector<TuneProposal>& proposals);

// One rank's measurements, per problem. Not thread-safe: a rank's calls are
// made one at a time.
class CallTuner {
 public:
  // The proposal for this rank's next call of `problem`, whose own plan
  // chose `planned` and can run `runnable` (algorithm_bit). The candidates,
  // fixed at the first call of a problem: `planned`, then the rest of
  // `runnable` from the most ambitious down.
  TuneProposal propose(const ProblemDesc& problem, Algorithm planned, unsigned runnable);
  // This rank's time of a call that ran `algorithm` for `problem`.
  void measured(const ProblemDesc& problem, Algorithm algorithm, double ms);
  // The group chose `algorithm` for `problem`, for `reason` (the measured
  // times, the same on every rank): later calls of the problem say it too.
  void keep(const ProblemDesc& problem, Algorithm algorithm, const std::string& reason);
  // The reason of the choice kept for `problem` ("" when none is kept).
  std::string kept_reason(const ProblemDesc& problem) const;

  // A measuring call's time is known once its work has finished, which on a
  // GPU is after the call returns: the call flow marks it started, and reads
  // its time (Transport::finished_call_ms) at the rank's next call, before
  // anything else can reuse the transport's clock.
  void started(const ProblemDesc& problem, Algorithm algorithm);
  // Whether a started call's time is still to be read.
  bool awaiting() const noexcept { return awaiting_.has_value(); }
  // The started call's time: measured() of its problem and algorithm.
  void finished(double ms);
  // The started call's time cannot be read (its work failed): it counts as
  // not run, so its candidate is measured again.
  void abandon() noexcept { awaiting_.reset(); }

 private:
  using Key = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, int, int, bool>;
  struct Entry {
    std::vector<Algorithm> candidates;
    std::array<int, 3> runs{};     // by Algorithm's value
    std::array<double, 3> best{};  // ms, valid where runs > 0
    std::optional<Algorithm> kept;
    std::string kept_reason;
  };
  static Key key_of(const ProblemDesc& problem);
  std::map<Key, Entry> entries_;
  struct Started {
    ProblemDesc problem;
    Algorithm algorithm;
  };
  std::optional<Started> awaiting_;
};

}  // namespace asynctp::core
