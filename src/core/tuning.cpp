#include "core/tuning.hpp"

#include <algorithm>
#include <cstdio>

#include "core/log.hpp"
#include "core/planner.hpp"
#include "core/planner_model.hpp"

namespace asynctp::core {
namespace {

// Entry arrays are indexed by the concrete algorithms' order.
std::size_t slot_of(Algorithm a) { return static_cast<std::size_t>(a) - 1; }

// Runs of `a` whose time was read.
int runs_read(const std::array<std::vector<double>, 3>& times, Algorithm a) {
  return static_cast<int>(times[slot_of(a)].size());
}

bool concrete(Algorithm a) {
  return a == Algorithm::native || a == Algorithm::pipelined || a == Algorithm::decomposed;
}

// The candidates of a complete proposal, in its order.
std::vector<Algorithm> candidates_of(const TuneProposal& p) {
  std::vector<Algorithm> out;
  for (const TunedTime& t : p.times) out.push_back(t.algorithm);
  return out;
}

// Each candidate's time over the ranks: the mean or the slowest.
std::vector<double> group_times(const std::vector<TuneProposal>& proposals, std::size_t count,
                                GroupTime how) {
  std::vector<double> out(count, 0.0);
  for (const TuneProposal& p : proposals) {
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = how == GroupTime::mean_over_ranks ? out[i] + p.times[i].ms
                                                 : std::max(out[i], p.times[i].ms);
    }
  }
  if (how == GroupTime::mean_over_ranks) {
    for (double& t : out) t /= static_cast<double>(proposals.size());
  }
  return out;
}

TuneVerdict choose(const std::vector<TuneProposal>& proposals, int runs) {
  const std::vector<Algorithm> candidates = candidates_of(proposals.front());
  const bool mean = std::all_of(proposals.begin(), proposals.end(), [](const TuneProposal& p) {
    return p.group_time == GroupTime::mean_over_ranks;
  });
  const std::vector<double> slowest =
      group_times(proposals, candidates.size(), GroupTime::slowest_rank);
  const std::vector<double> chosen_by =
      mean ? group_times(proposals, candidates.size(), GroupTime::mean_over_ranks) : slowest;
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    if (chosen_by[i] < chosen_by[best]) best = i;
  }
  // "native 1.234 ms, pipelined ..." (`unit` after each time).
  const auto listed = [&](const std::vector<double>& times, const char* unit) {
    std::string out;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      out +=
          std::string(i ? ", " : "") + to_string(candidates[i]) + " " + format_ms(times[i]) + unit;
    }
    return out;
  };
  TuneVerdict v;
  v.action = TuneAction::choose;
  v.algorithm = candidates[best];
  v.reason = "measured choice: " + listed(chosen_by, " ms");
  v.runs = runs;
  if (mean) {
    // The slowest rank's times too, without their unit, so that a reader of
    // the reason sees how far the ranks spread.
    v.reason += " (the mean over ranks of each rank's lower median of " + std::to_string(runs) +
                " calls; the slowest rank's: " + listed(slowest, "") + "; kept for this problem)";
  } else {
    v.reason += " (the slowest rank's lower median of " + std::to_string(runs) +
                " calls each; kept for this problem)";
  }
  return v;
}

}  // namespace

double lower_median(std::vector<double> ms) {
  if (ms.empty()) return 0;
  const auto middle = ms.begin() + static_cast<std::ptrdiff_t>((ms.size() - 1) / 2);
  std::nth_element(ms.begin(), middle, ms.end());
  return *middle;
}

int tune_runs_per_candidate(double largest_flops) noexcept {
  return largest_flops < kShortCallFlops ? kShortCallTuneRuns : kTuneRunsPerCandidate;
}

TuneVerdict resolve_tuning(const std::vector<TuneProposal>& proposals, int runs) {
  if (proposals.empty()) return {};
  const TuneProposal& first = proposals.front();
  const auto all = [&](auto same) { return std::all_of(proposals.begin(), proposals.end(), same); };
  switch (first.step) {
    case TuneStep::none:
      return {};
    case TuneStep::measure:
    case TuneStep::kept:
      if (!concrete(first.algorithm) || !all([&](const TuneProposal& p) {
            return p.step == first.step && p.algorithm == first.algorithm;
          })) {
        return {};
      }
      if (first.step == TuneStep::kept) {
        return {TuneAction::kept, first.algorithm, runs,
                std::string("measured choice: ") + to_string(first.algorithm) +
                    ", kept from this problem's first calls"};
      }
      return {TuneAction::measure, first.algorithm, runs,
              std::string("measured choice: measuring ") + to_string(first.algorithm) +
                  " (every algorithm the group can run gets " + std::to_string(runs) +
                  " calls first, in turn)"};
    case TuneStep::complete: {
      const std::vector<Algorithm> candidates = candidates_of(first);
      if (candidates.empty() || !std::all_of(candidates.begin(), candidates.end(), concrete) ||
          !all([&](const TuneProposal& p) {
            return p.step == TuneStep::complete && candidates_of(p) == candidates &&
                   std::all_of(p.times.begin(), p.times.end(),
                               [](const TunedTime& t) { return t.ms >= 0; });
          })) {
        return {};
      }
      return choose(proposals, runs);
    }
  }
  return {};
}

CallTuner::Key CallTuner::key_of(const ProblemDesc& p) {
  return {static_cast<int>(p.op),       p.world_size,  p.m, p.n, p.k, static_cast<int>(p.dtype),
          static_cast<int>(p.b_layout), p.gathered_out};
}

TuneProposal CallTuner::propose(const ProblemDesc& problem, Algorithm planned, unsigned runnable) {
  Entry& e = entries_[key_of(problem)];
  if (e.candidates.empty() && concrete(planned)) {
    e.candidates.push_back(planned);
    for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      if (a != planned && (runnable & algorithm_bit(a)) != 0) e.candidates.push_back(a);
    }
  }
  TuneProposal p;
  p.group_time = group_time_;
  if (e.kept) {
    p.step = TuneStep::kept;
    p.algorithm = *e.kept;
    return p;
  }
  if (e.candidates.size() < 2) return p;  // nothing to choose between
  // One call of each candidate per round: the candidate with the fewest runs
  // started. On a tie, the earlier in the candidates' order in even rounds
  // and the later in odd ones, so that no candidate's measuring call always
  // follows the same algorithm's (a GEMM-bound call right after a long
  // link-bound one meets other clocks than after another GEMM-bound one).
  const auto done = [&](Algorithm a) {
    return std::max(e.started[slot_of(a)], runs_read(e.times, a));
  };
  int fewest = e.runs_wanted;
  for (Algorithm a : e.candidates) fewest = std::min(fewest, done(a));
  std::optional<Algorithm> next;
  if (fewest < e.runs_wanted) {
    const bool forward = fewest % 2 == 0;
    for (std::size_t j = 0; j < e.candidates.size() && !next; ++j) {
      const Algorithm a = e.candidates[forward ? j : e.candidates.size() - 1 - j];
      if (done(a) == fewest) next = a;
    }
  }
  if (next) {
    p.step = TuneStep::measure;
    p.algorithm = *next;
    return p;
  }
  // Every run started; a time not yet read leaves nothing to propose (the
  // call flow reads them first: waits_for_times).
  for (Algorithm a : e.candidates) {
    if (runs_read(e.times, a) < e.runs_wanted) return p;
  }
  p.step = TuneStep::complete;
  for (Algorithm a : e.candidates) p.times.push_back({a, lower_median(e.times[slot_of(a)])});
  return p;
}

void CallTuner::measured(const ProblemDesc& problem, Algorithm algorithm, double ms) {
  if (!concrete(algorithm)) return;
  Entry& e = entries_[key_of(problem)];
  std::vector<double>& times = e.times[slot_of(algorithm)];
  times.push_back(ms);
  // Each call's time, so that another statistic of the same calls can be
  // replayed from a log (ASYNCTP_DEBUG=INFO).
  if (log_enabled(LogLevel::info)) {
    char took[64];
    std::snprintf(took, sizeof took, " call %zu took %.4f ms; ", times.size(), ms);
    log(LogLevel::info, problem.rank,
        "measured choice: " + std::string(to_string(algorithm)) + took + problem.to_string());
  }
}

std::optional<int> CallTuner::start(const ProblemDesc& problem, Algorithm algorithm, int runs) {
  if (!concrete(algorithm)) return std::nullopt;
  Entry& e = entries_[key_of(problem)];
  e.runs_wanted = std::max(e.runs_wanted, runs);
  for (int slot = 0; slot < kTimedCallSlots; ++slot) {
    const bool busy = std::any_of(started_.begin(), started_.end(),
                                  [&](const Started& s) { return s.slot == slot; });
    if (busy) continue;
    started_.push_back({problem, algorithm, slot});
    ++e.started[slot_of(algorithm)];
    return slot;
  }
  return std::nullopt;
}

void CallTuner::forget(const Started& s) noexcept {
  const auto it = entries_.find(key_of(s.problem));  // start() made it
  if (it == entries_.end()) return;
  int& started = it->second.started[slot_of(s.algorithm)];
  started = std::max(0, started - 1);
}

void CallTuner::cancel(int slot) {
  const auto it = std::find_if(started_.begin(), started_.end(),
                               [&](const Started& s) { return s.slot == slot; });
  if (it == started_.end()) return;
  forget(*it);
  started_.erase(it);
}

void CallTuner::read_times(const std::function<std::optional<double>(int slot)>& read,
                           bool waited) {
  // Each entry leaves the list as it is read, so that a read that throws
  // leaves exactly the unread ones behind.
  for (std::size_t i = 0; i < started_.size();) {
    const Started s = started_[i];
    const std::optional<double> ms = read(s.slot);
    if (!ms && !waited) {
      ++i;
      continue;
    }
    started_.erase(started_.begin() + static_cast<std::ptrdiff_t>(i));
    if (ms) {
      measured(s.problem, s.algorithm, *ms);
    } else {
      forget(s);
    }
  }
}

unsigned CallTuner::candidate_bits(const ProblemDesc& problem) const {
  const auto it = entries_.find(key_of(problem));
  unsigned bits = 0;
  if (it != entries_.end()) {
    for (Algorithm a : it->second.candidates) bits |= algorithm_bit(a);
  }
  return bits;
}

bool CallTuner::waits_for_times(const ProblemDesc& problem) const {
  const auto it = entries_.find(key_of(problem));
  if (it == entries_.end() || it->second.kept || it->second.candidates.size() < 2) return false;
  const Entry& e = it->second;
  bool unread = false;
  for (Algorithm a : e.candidates) {
    const std::size_t i = slot_of(a);
    const int read = runs_read(e.times, a);
    if (std::max(e.started[i], read) < e.runs_wanted) return false;
    unread = unread || read < e.runs_wanted;
  }
  return unread;
}

void CallTuner::abandon() noexcept {
  for (const Started& s : started_) forget(s);
  started_.clear();
}

void CallTuner::keep(const ProblemDesc& problem, Algorithm algorithm, const std::string& reason) {
  if (!concrete(algorithm)) return;
  Entry& e = entries_[key_of(problem)];
  e.kept = algorithm;
  e.kept_reason = reason;
}

std::string CallTuner::kept_reason(const ProblemDesc& problem) const {
  const auto it = entries_.find(key_of(problem));
  return it == entries_.end() || !it->second.kept ? std::string() : it->second.kept_reason;
}

}  // namespace asynctp::core
