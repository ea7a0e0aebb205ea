// Randomized stress of the CPU backend (support/stress_cases.hpp draws the
// calls and judges them): many calls of both ops with random world sizes,
// shapes on and off the tile grid, dtypes, B layouts, algorithms and tiles,
// some with faults injected through the test hooks (delayed, reordered and
// dropped chunks, one rank's bad argument). A call that hangs aborts the
// process (support/collective.hpp's watchdog). The groups are reused across
// calls, so a failed call must leave its group usable for the next.
//
// ASYNCTP_STRESS_CALLS (default 300) sets the number of calls,
// ASYNCTP_STRESS_SEED the seed (fixed by default, so CI runs the same calls
// every time), ASYNCTP_STRESS_TIMEOUT_MS the timeout of calls with a dropped
// chunk (default 200; raise it under slow sanitizers). process_stress_test.cpp
// makes the same calls over the process transport, with killed ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "stress/host_stress_call.hpp"
#include "support/collective.hpp"
#include "support/stress_cases.hpp"

namespace asynctp {
namespace {

using asynctp_test::Outcome;
using namespace asynctp_test::stress;

class Stress {
 public:
  void run_one(const Case& c, std::mt19937_64& rng, Tally& tally) {
    ++tally.calls;
    ++tally.by_fault[to_string(c.fault)];
    cpu::Group& group = group_of(c.world);
    std::vector<double> seconds(static_cast<std::size_t>(c.world), 0.0);
    std::vector<std::string> problems;  // what went wrong, if anything
    HostStressCall call(c, rng);
    std::vector<LocalVerdict> verdicts;
    for (int r = 0; r < c.world; ++r) verdicts.push_back(call.verdict(group.comm(r), c.options));
    const std::vector<Outcome> outcomes = asynctp_test::run_collective(
        group, [&](Comm& comm) { return call.call(comm, c.options, seconds[comm.rank()]); });
    judge(c, verdicts, outcomes, seconds, tally, problems, call.out_name(),
          [&](int r) { return call.correct(r); },
          [&](int r) { return call.untouched_outputs(r); }, drop_phrase(c));
    report_problems(c, tally, problems);
  }

 private:
  cpu::Group& group_of(int world) {
    auto& g = groups_[world];
    if (!g) g = std::make_unique<cpu::Group>(cpu::GroupConfig{world, 2});
    return *g;
  }

  std::map<int, std::unique_ptr<cpu::Group>> groups_;
};

TEST(Stress, RandomCallsEndCorrectOrWithTheDocumentedError) {
  Stress stress;
  run_cpu_stress("cpu", cpu_limits(), env_int("ASYNCTP_STRESS_CALLS", 300), stress);
}

}  // namespace
}  // namespace asynctp
