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
// chunk (default 200; raise it under slow sanitizers).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/reference.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
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
    std::vector<LocalVerdict> verdicts;
    std::vector<Outcome> outcomes;
    std::vector<std::string> problems;  // what went wrong, if anything
    const auto bad = [&](int r) { return c.fault == Fault::bad_argument && r == c.fault_rank; };
    // Runs `call` on every rank, timing each rank's call.
    const auto run = [&](const std::function<RunInfo(Comm&)>& call) {
      return asynctp_test::run_collective(group, [&](Comm& comm) {
        const auto begin = std::chrono::steady_clock::now();
        const auto stop = [&] {
          seconds[comm.rank()] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        };
        try {
          RunInfo info = call(comm);
          stop();
          return info;
        } catch (...) {
          stop();
          throw;
        }
      });
    };

    if (c.reduce_scatter) {
      asynctp_test::RsShape shape = asynctp_test::rs_shape(c.world, c.m, c.n, 1, c.dtype,
                                                           c.b_col_major);
      shape.k = c.k;
      asynctp_test::ReduceScatterProblem problem(shape, rng);
      problem.poison_outputs();
      const auto out = [&](int r) { return bad(r) ? broken(problem.out(r)) : problem.out(r); };
      for (int r = 0; r < c.world; ++r) {
        verdicts.push_back(local_verdict([&] {
          plan_fused_matmul_reduce_scatter(group.comm(r), problem.a(r), problem.b(r), out(r),
                                           c.options);
        }));
      }
      outcomes = run([&](Comm& comm) {
        const int r = comm.rank();
        return fused_matmul_reduce_scatter(comm, problem.a(r), problem.b(r), out(r), c.options);
      });
      judge(c, verdicts, outcomes, seconds, tally, problems, "out",
            [&](int r) { return problem.verdict(r).ok; },
            [&](int r) { return untouched(problem.out(r)); },
            "(the partial of rank " + std::to_string(c.fault_rank) + ") never arrived");
    } else {
      asynctp_test::Shape shape = asynctp_test::make_shape(c.world, c.m, c.n, c.k[0], c.dtype,
                                                           c.b_col_major);
      shape.gathered = c.gathered;
      asynctp_test::FusedProblem problem(shape, rng);
      problem.poison_outputs();
      const auto out = [&](int r) { return bad(r) ? broken(problem.c(r)) : problem.c(r); };
      const auto gathered = [&](int r) { return c.gathered ? problem.g(r) : TensorView{}; };
      for (int r = 0; r < c.world; ++r) {
        const TensorView g = gathered(r);
        verdicts.push_back(local_verdict([&] {
          plan_fused_all_gather_matmul(group.comm(r), problem.a(r), problem.b(r), out(r),
                                       c.gathered ? &g : nullptr, c.options);
        }));
      }
      outcomes = run([&](Comm& comm) {
        const int r = comm.rank();
        const TensorView g = gathered(r);
        return fused_all_gather_matmul(comm, problem.a(r), problem.b(r), out(r),
                                       c.gathered ? &g : nullptr, c.options);
      });
      judge_all_gather(c, verdicts, outcomes, seconds, tally, problems, problem);
    }
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
  asynctp_test::CleanPlannerEnv clean_env;
  CaseLimits limits;
  limits.drop_timeout_ms = env_int("ASYNCTP_STRESS_TIMEOUT_MS", 200);
  Stress stress;
  run_stress("cpu", limits, env_int("ASYNCTP_STRESS_CALLS", 300),
             static_cast<std::uint64_t>(env_int("ASYNCTP_STRESS_SEED", 0x5eed)),
             [&](const Case& c, std::mt19937_64& rng, Tally& tally) { stress.run_one(c, rng, tally); });
}

}  // namespace
}  // namespace asynctp
