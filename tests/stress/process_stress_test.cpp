// Randomized stress of the CPU process transport: the calls of the
// in-process stress (support/stress_cases.hpp draws and judges them, here
// with W = 2..4) made by one process per rank (process/process_ranks.hpp
// forks them, each with its own communicator over shared memory), and on
// top a killed rank: SIGKILL before the call, in a copy or compute hook, or
// at a random time into the call. Each call runs on a new group (a death
// breaks its group for good), and no call may leave a segment in /dev/shm.
//
// Each process makes the whole call from the same seed (every rank's
// inputs, so that it can check its own outputs against the float64
// reference) and tells the parent, through notes, what its plan said of its
// arguments (before the call: a rank killed later has told it), then how
// long its call took and whether its outputs are correct or untouched.
//
// ASYNCTP_STRESS_PROCESS_CALLS (default 60) sets the number of calls,
// ASYNCTP_STRESS_SEED the seed, ASYNCTP_STRESS_TIMEOUT_MS the timeout of
// calls with a dropped chunk (default 200), ASYNCTP_STRESS_KILL_TIMEOUT_MS
// that of calls with a killed rank (default 1000: the survivors must notice
// the death long before).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "process/process_ranks.hpp"
#include "stress/host_stress_call.hpp"
#include "support/collective.hpp"
#include "support/stress_cases.hpp"

namespace asynctp {
namespace {

using asynctp_test::Note;
using asynctp_test::Outcome;
using asynctp_test::RankReport;
using namespace asynctp_test::stress;

// A rank's notes: its verdict ("code\nmessage", code -1 for none), then
// "seconds correct untouched" once its call has ended.
std::string verdict_note(const LocalVerdict& v) {
  return std::to_string(v.code ? static_cast<int>(*v.code) : -1) + "\n" + v.message;
}

LocalVerdict verdict_of(const std::string& note) {
  LocalVerdict v;
  const auto newline = note.find('\n');
  const int code = std::atoi(note.substr(0, newline).c_str());
  if (code >= 0) v.code = static_cast<ErrorCode>(code);
  v.message = newline == std::string::npos ? "" : note.substr(newline + 1);
  return v;
}

struct Facts {
  double seconds = 0;
  bool correct = false;
  bool untouched = false;
};

std::string facts_note(const Facts& f) {
  return std::to_string(f.seconds) + " " + (f.correct ? "1" : "0") + " " +
         (f.untouched ? "1" : "0");
}

Facts facts_of(const std::string& note) {
  Facts f;
  char correct = '0', untouched = '0';
  std::sscanf(note.c_str(), "%lf %c %c", &f.seconds, &correct, &untouched);
  f.correct = correct == '1';
  f.untouched = untouched == '1';
  return f;
}

// The options of the case, with the hook that kills the victim.
Options with_kill(const Case& c) {
  Options options = c.options;
  if (c.fault != Fault::kill) return options;
  const int victim = c.fault_rank, chunk = c.fault_chunk;
  const auto die = [victim, chunk](int rank, int at) {
    if (rank == victim && at == chunk) ::raise(SIGKILL);
  };
  if (c.kill_point == KillPoint::before_copy) options.hooks.before_copy = die;
  if (c.kill_point == KillPoint::before_compute) options.hooks.before_compute = die;
  return options;
}

// One rank's process: the call, the notes, and the victim's death.
Outcome run_rank(const Case& c, const Options& options, std::uint64_t data_seed, Comm& comm,
                 const Note& note) {
  std::mt19937_64 data(data_seed);
  HostStressCall call(c, data);
  const int r = comm.rank();
  const bool victim = c.fault == Fault::kill && r == c.fault_rank;
  note(verdict_note(call.verdict(comm, options)));
  if (victim && c.kill_point == KillPoint::before_call) ::raise(SIGKILL);
  if (victim && c.kill_point == KillPoint::timer) {
    std::thread([us = c.kill_after_us] {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
      ::raise(SIGKILL);
    }).detach();
  }
  Facts facts;
  const Outcome out = asynctp_test::outcome_of([&] { return call.call(comm, options, facts.seconds); });
  // Not killed yet (its hook never came, its call refused, or its call
  // ended before the timer): after its last part.
  if (victim) ::raise(SIGKILL);
  facts.correct = out.ok && call.correct(r);
  facts.untouched = call.untouched_outputs(r);
  note(facts_note(facts));
  return out;
}

class ProcessStress {
 public:
  void run_one(const Case& c, std::mt19937_64& rng, Tally& tally) {
    ++tally.calls;
    ++tally.by_fault[fault_label(c.fault, c.kill_point)];
    const std::uint64_t data_seed = rng();
    const Options options = with_kill(c);
    const cpu::UniqueId id = cpu::make_unique_id();
    cpu::ProcessOptions process_options;
    process_options.gemm_workers = 2;
    process_options.setup_timeout_ms = 60'000;
    const std::vector<RankReport> reports = asynctp_test::run_process_ranks(
        c.world, id,
        [&](Comm& comm, const Note& note) { return run_rank(c, options, data_seed, comm, note); },
        process_options, kHangLimitS);

    const int victim = c.fault == Fault::kill ? c.fault_rank : -1;
    std::vector<std::string> problems;
    std::vector<LocalVerdict> verdicts(static_cast<std::size_t>(c.world));
    std::vector<Outcome> outcomes(static_cast<std::size_t>(c.world));
    std::vector<double> seconds(static_cast<std::size_t>(c.world), 0.0);
    std::vector<Facts> facts(static_cast<std::size_t>(c.world));
    bool hung = false;
    for (const RankReport& report : reports) {
      const auto r = static_cast<std::size_t>(report.rank);
      if (!report.notes.empty()) verdicts[r] = verdict_of(report.notes[0]);
      if (report.notes.size() > 1) facts[r] = facts_of(report.notes[1]);
      outcomes[r] = report.outcome;
      seconds[r] = facts[r].seconds;
      if (report.rank == victim) continue;
      // The harness kills a rank only when the call ran past its limit.
      hung = hung || report.signal == SIGKILL;
      if (!report.exited || report.exit_code != 0 || !report.reported ||
          report.notes.size() != 2) {
        problems.push_back("rank " + std::to_string(report.rank) + " ended with exit code " +
                           std::to_string(report.exit_code) + ", signal " +
                           std::to_string(report.signal) + ", " +
                           std::to_string(report.notes.size()) + " notes [" +
                           report.outcome.message + "]");
      }
    }
    if (victim >= 0 && reports[static_cast<std::size_t>(victim)].notes.empty()) {
      problems.push_back("the killed rank sent no verdict");
    }
    if (hung) ++tally.hangs;
    for (const std::string& name : asynctp_test::leftover_segments(id)) {
      problems.push_back("left in /dev/shm: " + name);
    }
    const auto correct = [&](int r) { return facts[static_cast<std::size_t>(r)].correct; };
    const auto untouched_outputs = [&](int r) {
      return facts[static_cast<std::size_t>(r)].untouched;
    };
    const char* out_name = c.reduce_scatter ? "out" : "c_out";
    if (problems.empty() && victim >= 0) {
      judge_killed(c, verdicts, outcomes, seconds,
                   reports[static_cast<std::size_t>(victim)].signal == SIGKILL, tally, problems,
                   out_name, correct, untouched_outputs, drop_phrase(c));
    } else if (problems.empty()) {
      judge(c, verdicts, outcomes, seconds, tally, problems, out_name, correct,
            untouched_outputs, drop_phrase(c));
    }
    report_problems(c, tally, problems);
  }

 private:
  // A call's processes still running after this long hang (every wait of a
  // call is bounded by its 10 s timeout at most).
  static constexpr double kHangLimitS = 60.0;
};

TEST(ProcessStress, RandomCallsAndKilledRanksEndCorrectOrWithTheDocumentedError) {
  CaseLimits limits = cpu_limits();
  limits.min_world = 2;
  limits.max_world = 4;
  limits.kill_rank = true;
  limits.kill_timeout_ms = env_int("ASYNCTP_STRESS_KILL_TIMEOUT_MS", 1000);
  ProcessStress stress;
  run_cpu_stress("cpu processes", limits, env_int("ASYNCTP_STRESS_PROCESS_CALLS", 60), stress);
}

}  // namespace
}  // namespace asynctp
