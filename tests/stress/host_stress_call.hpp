// One drawn stress call (support/stress_cases.hpp) with its data in host
// memory, as both CPU runners make it: the ranks as threads of this process
// (stress_test.cpp) and as processes (process_stress_test.cpp), where each
// process makes the same call from the same seed and uses its own rank's
// part. Every rank's inputs are drawn from `rng`, its outputs poisoned; the
// bad rank of a bad_argument call gets a broken output view.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/stress_cases.hpp"

namespace asynctp_test::stress {

class HostStressCall {
 public:
  HostStressCall(const Case& c, std::mt19937_64& rng) : c_(c) {
    if (c.reduce_scatter) {
      RsShape shape = rs_shape(c.world, c.m, c.n, 1, c.dtype, c.b_col_major);
      shape.k = c.k;
      reduce_scatter_.emplace(shape, rng);
      reduce_scatter_->poison_outputs();
    } else {
      Shape shape = make_shape(c.world, c.m, c.n, c.k[0], c.dtype, c.b_col_major);
      shape.gathered = c.gathered;
      all_gather_.emplace(shape, rng);
      all_gather_->poison_outputs();
    }
  }

  // What rank comm.rank()'s plan says of its arguments (nothing is sent).
  LocalVerdict verdict(asynctp::Comm& comm, const Options& options) const {
    return local_verdict([&] { (void)run(comm, options, /*plan_only=*/true); });
  }

  // Rank comm.rank()'s call; `seconds` is how long it took, whether it
  // returned or threw.
  asynctp::RunInfo call(asynctp::Comm& comm, const Options& options, double& seconds) const {
    const auto begin = std::chrono::steady_clock::now();
    const auto stop = [&] {
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    try {
      asynctp::RunInfo info = run(comm, options, /*plan_only=*/false);
      stop();
      return info;
    } catch (...) {
      stop();
      throw;
    }
  }

  // Rank r's outputs against the contract of a call that succeeded.
  bool correct(int r) {
    return reduce_scatter_ ? reduce_scatter_->verdict(r).ok
                           : all_gather_correct(c_, *all_gather_, r);
  }

  // Whether rank r's outputs are all still poisoned.
  bool untouched_outputs(int r) {
    return reduce_scatter_ ? untouched(reduce_scatter_->out(r))
                           : all_gather_untouched(*all_gather_, r);
  }

  // The name of the output argument (the bad rank's error names it).
  const char* out_name() const { return reduce_scatter_ ? "out" : "c_out"; }

 private:
  asynctp::RunInfo run(asynctp::Comm& comm, const Options& options, bool plan_only) const {
    const int r = comm.rank();
    const bool bad = c_.fault == Fault::bad_argument && r == c_.fault_rank;
    if (reduce_scatter_) {
      const ReduceScatterProblem& p = *reduce_scatter_;
      const TensorView out = bad ? broken(p.out(r)) : p.out(r);
      if (plan_only) {
        (void)asynctp::plan_fused_matmul_reduce_scatter(comm, p.a(r), p.b(r), out, options);
        return {};
      }
      return asynctp::fused_matmul_reduce_scatter(comm, p.a(r), p.b(r), out, options);
    }
    const FusedProblem& p = *all_gather_;
    const TensorView out = bad ? broken(p.c(r)) : p.c(r);
    const TensorView g = p.g(r);
    const TensorView* gathered = c_.gathered ? &g : nullptr;
    if (plan_only) {
      (void)asynctp::plan_fused_all_gather_matmul(comm, p.a(r), p.b(r), out, gathered, options);
      return {};
    }
    return asynctp::fused_all_gather_matmul(comm, p.a(r), p.b(r), out, gathered, options);
  }

  const Case c_;
  std::optional<FusedProblem> all_gather_;
  std::optional<ReduceScatterProblem> reduce_scatter_;
};

// The CPU runners' draws: the default grids and faults, the timeout of a
// dropped chunk from ASYNCTP_STRESS_TIMEOUT_MS (default 200 ms).
inline CaseLimits cpu_limits() {
  CaseLimits limits;
  limits.drop_timeout_ms = env_int("ASYNCTP_STRESS_TIMEOUT_MS", 200);
  return limits;
}

// Runs `calls` drawn calls through runner.run_one(case, rng, tally), from
// the seed ASYNCTP_STRESS_SEED (fixed by default, so CI runs the same calls
// every time), with the planner's environment variables cleared.
template <class Runner>
void run_cpu_stress(const char* backend, const CaseLimits& limits, std::int64_t calls,
                    Runner& runner) {
  CleanPlannerEnv clean_env;
  run_stress(backend, limits, calls,
             static_cast<std::uint64_t>(env_int("ASYNCTP_STRESS_SEED", 0x5eed)),
             [&](const Case& c, std::mt19937_64& rng, Tally& tally) { runner.run_one(c, rng, tally); });
}

}  // namespace asynctp_test::stress
